// The command line's grammar: options, their values, and what a user typed wrong, as data. Parsing never throws:
// a mistake becomes a one-line `usage` result that cli.ts prints with a pointer to --help (exit 2), since a stack
// trace for a mistyped flag tells the user nothing.

/** Config files looked for in the working directory when nothing is given, in this order (tileserver-gl reads config.json the same way). */
export const AUTO_CONFIG_FILES = ['config.toml', 'tileserver.toml'] as const;

export interface RunArgs {
  kind: 'run';
  /** `--config FILE`. */
  config: string | undefined;
  /** Archives, folders and remote archive URLs (http(s), s3://, gs://, az://) given as arguments. */
  inputs: string[];
  host: string | undefined;
  port: number | undefined;
  workers: number | 'auto' | undefined;
}

export type ParsedArgs = RunArgs | { kind: 'help' } | { kind: 'version' } | { kind: 'usage'; message: string };

type OptionName = 'config' | 'host' | 'port' | 'workers' | 'help' | 'version';

/** Options that take a value; the others are flags. */
const TAKES_VALUE: ReadonlySet<OptionName> = new Set(['config', 'host', 'port', 'workers']);
const LONG: Readonly<Record<string, OptionName>> = { config: 'config', host: 'host', port: 'port', workers: 'workers', help: 'help', version: 'version' };
const SHORT: Readonly<Record<string, OptionName>> = { c: 'config', p: 'port', h: 'help', v: 'version' };

/** How an option is shown in messages: `-c, --config` style names are long enough to recognise. */
const shown = (name: OptionName) => `--${name}`;

/** Quotes what the user typed for a one-line message, with control characters made visible. */
export function quoted(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 77)}...` : text);
}

function usage(message: string): ParsedArgs {
  return { kind: 'usage', message };
}

/** `--port`: an integer 0..65535 written in decimal digits. */
function parsePort(value: string): number | string {
  if (!/^\d{1,5}$/.test(value) || Number(value) > 65535) return `--port: expected an integer 0..65535, got ${quoted(value)}`;
  return Number(value);
}

/** `--workers`: "auto" or an integer 1..256 (the schema's bounds for server.workers). */
function parseWorkers(value: string): number | 'auto' | string {
  if (value === 'auto') return 'auto';
  if (!/^\d{1,3}$/.test(value) || Number(value) < 1 || Number(value) > 256) return `--workers: expected "auto" or an integer 1..256, got ${quoted(value)}`;
  return Number(value);
}

export function parseArgs(argv: readonly string[]): ParsedArgs {
  const values: Partial<Record<OptionName, string | true>> = {};
  const inputs: string[] = [];
  let onlyPositionals = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (onlyPositionals || arg === '-' || !arg.startsWith('-')) {
      inputs.push(arg);
      continue;
    }
    if (arg === '--') {
      onlyPositionals = true;
      continue;
    }
    let name: OptionName | undefined;
    let inline: string | undefined;
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const key = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      if (eq >= 0) inline = arg.slice(eq + 1);
      name = Object.hasOwn(LONG, key) ? LONG[key] : undefined;
    } else {
      // `-c FILE` or `-cFILE`; short flags are not bundled (`-hv` is not two flags).
      const key = arg[1];
      name = Object.hasOwn(SHORT, key) ? SHORT[key] : undefined;
      if (name && arg.length > 2) {
        if (!TAKES_VALUE.has(name)) name = undefined;
        else inline = arg.slice(2);
      }
    }
    if (!name) return usage(`unknown option ${quoted(arg)}`);
    if (!TAKES_VALUE.has(name)) {
      if (inline !== undefined) return usage(`${shown(name)} takes no value`);
      values[name] = true;
      continue;
    }
    let value = inline;
    if (value === undefined) {
      const next = argv[i + 1];
      // A following option is not a value: `--port --workers 2` forgot the port.
      if (next === undefined || (next.startsWith('-') && next !== '-' && !/^-\d/.test(next))) return usage(`${shown(name)} needs a value`);
      value = next;
      i++;
    }
    if (value === '') return usage(`${shown(name)} needs a value`);
    if (values[name] !== undefined) return usage(`${shown(name)} is given more than once`);
    values[name] = value;
  }

  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };
  const config = values.config as string | undefined;
  if (config !== undefined && inputs.length > 0) return usage('give either --config FILE or archives/folders/URLs, not both');
  let port: number | undefined;
  if (values.port !== undefined) {
    const p = parsePort(values.port as string);
    if (typeof p === 'string') return usage(p);
    port = p;
  }
  let workers: number | 'auto' | undefined;
  if (values.workers !== undefined) {
    const w = parseWorkers(values.workers as string);
    if (typeof w === 'string' && w !== 'auto') return usage(w);
    workers = w;
  }
  return { kind: 'run', config, inputs, host: values.host as string | undefined, port, workers };
}
