// The grammar of `tileserver-ts mbtiles VERB ...` and `tileserver-ts convert IN OUT`. Parsing never throws: a
// mistake is a one-line `usage` result naming the flag or the argument (exit 2).
import { quoted } from './args.js';
import { WRITABLE_SCHEMAS, type WritableSchema } from '../mbtiles/archive.js';
import type { OnDuplicate } from '../mbtiles/copy.js';

export type MbtilesCommand =
  | { verb: 'validate'; file: string; update: boolean }
  | { verb: 'diff'; old: string; new: string; diff: string; force: boolean }
  | { verb: 'apply-patch'; base: string; diff: string; out: string | undefined; force: boolean }
  | { verb: 'copy'; sources: string[]; dst: string; minZoom?: number; maxZoom?: number; bboxes: [number, number, number, number][]; onDuplicate?: OnDuplicate; dstType?: WritableSchema }
  | { verb: 'meta-get'; file: string; key: string }
  | { verb: 'meta-set'; file: string; key: string; value: string | undefined }
  | { verb: 'summary'; file: string }
  | { verb: 'convert'; input: string; output: string; dstType?: WritableSchema };

export type ParsedMbtilesArgs = MbtilesCommand | { verb: 'help' } | { verb: 'usage'; message: string };

export const VERBS = ['validate', 'diff', 'apply-patch', 'copy', 'meta-get', 'meta-set', 'summary'] as const;

/** Flags of each verb: `true` takes a value, `false` is a switch; repeatable ones are listed in REPEATABLE. */
const FLAGS: Record<string, Record<string, boolean>> = {
  validate: { update: false },
  diff: { force: false },
  'apply-patch': { force: false },
  copy: { 'min-zoom': true, 'max-zoom': true, bbox: true, 'on-duplicate': true, 'dst-type': true },
  'meta-get': {},
  'meta-set': {},
  summary: {},
  convert: { 'dst-type': true },
};
const REPEATABLE = new Set(['bbox']);

const usage = (message: string): ParsedMbtilesArgs => ({ verb: 'usage', message });

function zoom(name: string, text: string): number | string {
  return /^\d{1,2}$/.test(text) && Number(text) <= 30 ? Number(text) : `--${name}: expected a whole number 0..30, got ${quoted(text)}`;
}

/** `west,south,east,north` in degrees, west <= east (no box across the antimeridian), south <= north. */
export function parseBbox(text: string): [number, number, number, number] | string {
  const parts = text.split(',');
  const nums = parts.map((p) => (/^\s*-?\d+(\.\d+)?\s*$/.test(p) ? Number(p) : NaN));
  if (nums.length !== 4 || nums.some((n) => !Number.isFinite(n))) return `--bbox: expected west,south,east,north in degrees, got ${quoted(text)}`;
  const [w, s, e, n] = nums;
  if (w < -180 || e > 180 || s < -90 || n > 90) return `--bbox: ${quoted(text)} is outside -180,-90,180,90`;
  if (w > e || s > n) return `--bbox: ${quoted(text)} has west above east or south above north`;
  return [w, s, e, n];
}

/** `argv` after `mbtiles` (`convert` is passed with verb `convert` first). */
export function parseMbtilesArgs(argv: readonly string[]): ParsedMbtilesArgs {
  const [verb, ...rest] = argv;
  if (verb === undefined || verb === '-h' || verb === '--help') return { verb: 'help' };
  if (!(verb in FLAGS)) return usage(`unknown mbtiles verb ${quoted(verb)} (one of ${VERBS.join(', ')})`);
  const allowed = FLAGS[verb];
  const values: Record<string, string[]> = {};
  const switches = new Set<string>();
  const args: string[] = [];
  for (let i = 0; i < rest.length; i++) {
    const arg = rest[i];
    if (arg === '-h' || arg === '--help') return { verb: 'help' };
    if (!arg.startsWith('--') || arg === '--') {
      if (arg.startsWith('-') && arg !== '-') return usage(`unknown ${verb} option ${quoted(arg)}`);
      args.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
    if (!(name in allowed)) return usage(`unknown ${verb} option ${quoted(arg)}`);
    if (!allowed[name]) {
      if (eq >= 0) return usage(`--${name} takes no value`);
      switches.add(name);
      continue;
    }
    const value = eq >= 0 ? arg.slice(eq + 1) : rest[++i];
    if (value === undefined || value === '' || (eq < 0 && value.startsWith('--'))) return usage(`--${name} needs a value`);
    if (values[name] && !REPEATABLE.has(name)) return usage(`--${name} is given more than once`);
    (values[name] ??= []).push(value);
  }
  const count = (lo: number, hi: number, names: string) =>
    args.length < lo || args.length > hi ? usage(`${verb} takes ${names}, got ${args.length} argument${args.length === 1 ? '' : 's'}`) : undefined;
  const dstType = (): WritableSchema | string | undefined => {
    const v = values['dst-type']?.[0];
    if (v === undefined) return undefined;
    return (WRITABLE_SCHEMAS as readonly string[]).includes(v) ? (v as WritableSchema) : `--dst-type: expected ${WRITABLE_SCHEMAS.join(', ')}, got ${quoted(v)}`;
  };
  switch (verb) {
    case 'validate':
      return count(1, 1, 'FILE') ?? { verb, file: args[0], update: switches.has('update') };
    case 'diff':
      return count(3, 3, 'OLD NEW DIFF') ?? { verb, old: args[0], new: args[1], diff: args[2], force: switches.has('force') };
    case 'apply-patch':
      return count(2, 3, 'BASE DIFF [OUT]') ?? { verb, base: args[0], diff: args[1], out: args[2], force: switches.has('force') };
    case 'meta-get':
      return count(2, 2, 'FILE KEY') ?? { verb, file: args[0], key: args[1] };
    case 'meta-set':
      return count(2, 3, 'FILE KEY [VALUE]') ?? { verb, file: args[0], key: args[1], value: args[2] };
    case 'summary':
      return count(1, 1, 'FILE') ?? { verb, file: args[0] };
    case 'convert': {
      const t = dstType();
      if (typeof t === 'string') return usage(t);
      return count(2, 2, 'IN OUT') ?? { verb, input: args[0], output: args[1], dstType: t };
    }
    default: {
      const wrong = count(2, Infinity, 'SRC... DST');
      if (wrong) return wrong;
      const t = dstType();
      if (typeof t === 'string') return usage(t);
      const minZoom = values['min-zoom'] ? zoom('min-zoom', values['min-zoom'][0]) : undefined;
      if (typeof minZoom === 'string') return usage(minZoom);
      const maxZoom = values['max-zoom'] ? zoom('max-zoom', values['max-zoom'][0]) : undefined;
      if (typeof maxZoom === 'string') return usage(maxZoom);
      if (minZoom !== undefined && maxZoom !== undefined && minZoom > maxZoom) return usage(`--min-zoom ${minZoom} is above --max-zoom ${maxZoom}`);
      const bboxes: [number, number, number, number][] = [];
      for (const b of values.bbox ?? []) {
        const box = parseBbox(b);
        if (typeof box === 'string') return usage(box);
        bboxes.push(box);
      }
      const dup = values['on-duplicate']?.[0];
      if (dup !== undefined && !['override', 'ignore', 'abort'].includes(dup)) return usage(`--on-duplicate: expected override, ignore or abort, got ${quoted(dup)}`);
      return { verb: 'copy', sources: args.slice(0, -1), dst: args[args.length - 1], minZoom, maxZoom, bboxes, onDuplicate: dup as OnDuplicate | undefined, dstType: t };
    }
  }
}
