// The grammar of `tileserver-ts expire`: which running server, which source or table, which zooms, and where the
// list comes from. Parsing never throws: a mistake is a one-line `usage` result naming the flag (exit 2).
import { quoted } from './args.js';

export interface ExpireArgs {
  kind: 'expire';
  /** The admin listener's base URL (`http://HOST:PORT`). */
  admin: URL;
  source: string | undefined;
  table: string | undefined;
  minZoom: number | undefined;
  maxZoom: number | undefined;
  /** A file to read, or `-` for stdin (the default). */
  input: string;
}

export type ParsedExpireArgs = ExpireArgs | { kind: 'help' } | { kind: 'usage'; message: string };

const VALUED = ['admin', 'source', 'table', 'min-zoom', 'max-zoom'] as const;
type Valued = (typeof VALUED)[number];

const usage = (message: string): ParsedExpireArgs => ({ kind: 'usage', message });

/** A zoom flag: a whole number 0..24 (the deepest zoom an expiry can name). */
function zoomFlag(name: string, text: string | undefined): number | string | undefined {
  if (text === undefined) return undefined;
  return /^\d{1,2}$/.test(text) && Number(text) <= 24 ? Number(text) : `--${name}: expected a whole number 0..24, got ${quoted(text)}`;
}

export function parseExpireArgs(argv: readonly string[]): ParsedExpireArgs {
  const values: Partial<Record<Valued, string>> = {};
  const inputs: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h' || arg === '--help') return { kind: 'help' };
    if (arg === '-' || !arg.startsWith('-')) {
      inputs.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const key = arg.startsWith('--') ? (eq < 0 ? arg.slice(2) : arg.slice(2, eq)) : '';
    if (!(VALUED as readonly string[]).includes(key)) return usage(`unknown expire option ${quoted(arg)}`);
    const name = key as Valued;
    const value = eq >= 0 ? arg.slice(eq + 1) : argv[++i];
    if (value === undefined || value === '' || (eq < 0 && value.startsWith('--'))) return usage(`--${name} needs a value`);
    if (values[name] !== undefined) return usage(`--${name} is given more than once`);
    values[name] = value;
  }
  if (values.admin === undefined) return usage('--admin http://HOST:PORT is required: the admin listener (server.admin_bind) of the running server');
  let admin: URL;
  try {
    admin = new URL(values.admin);
  } catch {
    return usage(`--admin: expected http://HOST:PORT, got ${quoted(values.admin)}`);
  }
  if (admin.protocol !== 'http:' && admin.protocol !== 'https:') return usage(`--admin: expected an http:// or https:// URL, got ${quoted(values.admin)}`);
  if ((values.source === undefined) === (values.table === undefined)) return usage('give one of --source ID or --table SCHEMA.NAME');
  const minZoom = zoomFlag('min-zoom', values['min-zoom']);
  if (typeof minZoom === 'string') return usage(minZoom);
  const maxZoom = zoomFlag('max-zoom', values['max-zoom']);
  if (typeof maxZoom === 'string') return usage(maxZoom);
  if (minZoom !== undefined && maxZoom !== undefined && minZoom > maxZoom) return usage(`--min-zoom ${minZoom} is above --max-zoom ${maxZoom}`);
  if (inputs.length > 1) return usage(`expire reads one list (a FILE or - for stdin), got ${inputs.length}`);
  return { kind: 'expire', admin, source: values.source, table: values.table, minZoom, maxZoom, input: inputs[0] ?? '-' };
}

/** The admin route's URL for these arguments. */
export function expireUrl(a: ExpireArgs): URL {
  const url = new URL('/__admin/expire', a.admin);
  if (a.source !== undefined) url.searchParams.set('source', a.source);
  if (a.table !== undefined) url.searchParams.set('table', a.table);
  if (a.minZoom !== undefined) url.searchParams.set('min_zoom', String(a.minZoom));
  if (a.maxZoom !== undefined) url.searchParams.set('max_zoom', String(a.maxZoom));
  return url;
}
