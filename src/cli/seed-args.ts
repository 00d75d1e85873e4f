// The grammar of `tileserver-ts seed`: which tiles of what, and where they go. Like the main command line
// (args.ts), parsing never throws: a mistake is a one-line `usage` result naming the flag, which cli.ts prints
// and exits 2 with.
import type { BBox, SeedFormat, SeedRequest } from '../seed/request.js';
import { quoted } from './args.js';

export type { BBox, SeedFormat, SeedRequest };

export interface SeedArgs extends SeedRequest {
  kind: 'seed';
}

export type ParsedSeedArgs = SeedArgs | { kind: 'help' } | { kind: 'usage'; message: string };

const VALUED = ['config', 'style', 'source', 'bbox', 'geojson', 'zoom', 'format', 'scale', 'tile-size', 'out', 'concurrency'] as const;
const FLAGS = ['warm', 'resume', 'dry-run', 'keep-empty', 'help'] as const;
type Valued = (typeof VALUED)[number];
type Flag = (typeof FLAGS)[number];

const MAX_ZOOM = 22;
const MAX_CONCURRENCY = 256;
const NUMBER = /^-?(\d+(\.\d*)?|\.\d+)$/;

const usage = (message: string): ParsedSeedArgs => ({ kind: 'usage', message });

/** `--bbox W,S,E,N`: four decimal numbers, west < east within ±180, south < north within ±90. */
export function parseBBox(text: string): BBox | string {
  const parts = text.split(',');
  if (parts.length !== 4 || parts.some((p) => !NUMBER.test(p.trim()))) return `--bbox: expected W,S,E,N in degrees, got ${quoted(text)}`;
  const [w, s, e, n] = parts.map((p) => Number(p.trim()));
  if (w < -180 || e > 180 || w >= e) return `--bbox: west and east must satisfy -180 <= west < east <= 180, got ${quoted(text)}`;
  if (s < -90 || n > 90 || s >= n) return `--bbox: south and north must satisfy -90 <= south < north <= 90, got ${quoted(text)}`;
  return [w, s, e, n];
}

/** `--zoom N` or `--zoom MIN-MAX`, 0..22. */
export function parseZoomRange(text: string): [number, number] | string {
  const m = /^(\d{1,2})(?:-(\d{1,2}))?$/.exec(text);
  if (!m) return `--zoom: expected MIN-MAX or one zoom (0..${MAX_ZOOM}), got ${quoted(text)}`;
  const min = Number(m[1]);
  const max = m[2] === undefined ? min : Number(m[2]);
  if (max > MAX_ZOOM) return `--zoom: zooms go up to ${MAX_ZOOM}, got ${quoted(text)}`;
  if (min > max) return `--zoom: the first zoom is above the second in ${quoted(text)}`;
  return [min, max];
}

const FORMAT_NAMES: Readonly<Record<string, SeedFormat>> = { png: 'png', jpg: 'jpg', jpeg: 'jpg', webp: 'webp', pbf: 'pbf', mvt: 'pbf', mlt: 'mlt' };

/** `--format`: an image format for a style; any tile format for a source (`jpeg` and `mvt` accepted as names). */
export function parseSeedFormat(text: string): { ok: true; format: SeedFormat } | { ok: false; message: string } {
  return Object.hasOwn(FORMAT_NAMES, text) ? { ok: true, format: FORMAT_NAMES[text] } : { ok: false, message: `--format: expected png, jpg, webp, pbf or mlt, got ${quoted(text)}` };
}

/** `--scale`: the pixel ratio of rendered tiles, 1, 2 or 3. */
export function parseSeedScale(text: string): 1 | 2 | 3 | string {
  return text === '1' || text === '2' || text === '3' ? (Number(text) as 1 | 2 | 3) : `--scale: expected 1, 2 or 3, got ${quoted(text)}`;
}

function parseConcurrency(text: string): number | string {
  if (!/^\d{1,3}$/.test(text) || Number(text) < 1 || Number(text) > MAX_CONCURRENCY) return `--concurrency: expected an integer 1..${MAX_CONCURRENCY}, got ${quoted(text)}`;
  return Number(text);
}

export function parseSeedArgs(argv: readonly string[]): ParsedSeedArgs {
  const values: Partial<Record<Valued, string>> = {};
  const flags = new Set<Flag>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '-h') {
      flags.add('help');
      continue;
    }
    if (!arg.startsWith('--')) return usage(`seed takes no positional argument, got ${quoted(arg)}`);
    const eq = arg.indexOf('=');
    const key = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
    if ((FLAGS as readonly string[]).includes(key)) {
      if (eq >= 0) return usage(`--${key} takes no value`);
      flags.add(key as Flag);
      continue;
    }
    if (!(VALUED as readonly string[]).includes(key)) return usage(`unknown seed option ${quoted(arg)}`);
    const name = key as Valued;
    let value: string | undefined = eq >= 0 ? arg.slice(eq + 1) : argv[i + 1];
    // A following option is not a value (`--bbox --zoom 3` forgot the box); a negative number is (`--bbox -10,...`).
    if (eq < 0) {
      if (value === undefined || (value.startsWith('--') && value.length > 2)) return usage(`--${name} needs a value`);
      i++;
    }
    if (value === '') return usage(`--${name} needs a value`);
    if (values[name] !== undefined) return usage(`--${name} is given more than once`);
    values[name] = value;
  }
  if (flags.has('help')) return { kind: 'help' };

  if (values.config === undefined) return usage('--config FILE is required: seeding uses the configuration the server runs with');
  if ((values.style === undefined) === (values.source === undefined)) return usage('give one of --style ID or --source ID');
  const target = values.style !== undefined ? { kind: 'style' as const, id: values.style } : { kind: 'source' as const, id: values.source! };
  if ((values.bbox === undefined) === (values.geojson === undefined)) return usage('give one of --bbox W,S,E,N or --geojson FILE');
  let area: SeedArgs['area'];
  if (values.bbox !== undefined) {
    const b = parseBBox(values.bbox);
    if (typeof b === 'string') return usage(b);
    area = { kind: 'bbox', bbox: b };
  } else {
    area = { kind: 'geojson', file: values.geojson! };
  }
  if (values.zoom === undefined) return usage('--zoom MIN-MAX is required');
  const zoom = parseZoomRange(values.zoom);
  if (typeof zoom === 'string') return usage(zoom);

  let format: SeedFormat | undefined;
  if (values.format !== undefined) {
    const f = parseSeedFormat(values.format);
    if (!f.ok) return usage(f.message);
    format = f.format;
    if (target.kind === 'style' && (format === 'pbf' || format === 'mlt')) return usage(`--format: a style renders images (png, jpg, webp), not ${format}`);
  }
  let scale: 1 | 2 | 3 = 1;
  if (values.scale !== undefined) {
    const s = parseSeedScale(values.scale);
    if (typeof s === 'string') return usage(s);
    if (target.kind !== 'style') return usage('--scale applies to rendered tiles: use it with --style');
    scale = s;
  }
  let tileSize: 256 | 512 = 512;
  if (values['tile-size'] !== undefined) {
    const t = values['tile-size'];
    if (t !== '256' && t !== '512') return usage(`--tile-size: expected 256 or 512, got ${quoted(t)}`);
    if (target.kind !== 'style') return usage('--tile-size applies to rendered tiles: use it with --style');
    tileSize = Number(t) as 256 | 512;
  }
  let concurrency: number | undefined;
  if (values.concurrency !== undefined) {
    const c = parseConcurrency(values.concurrency);
    if (typeof c === 'string') return usage(c);
    concurrency = c;
  }

  const out = values.out;
  const warm = flags.has('warm');
  const dryRun = flags.has('dry-run');
  if (out !== undefined && warm) return usage('give either --out FILE or --warm, not both');
  if (out === undefined && !warm && !dryRun) return usage('give --out FILE.pmtiles|FILE.mbtiles or --warm (or --dry-run to count the tiles)');
  if (out !== undefined && !/\.(pmtiles|mbtiles)$/i.test(out)) return usage(`--out: the archive's name must end in .pmtiles or .mbtiles, got ${quoted(out)}`);
  if (flags.has('resume') && out === undefined) return usage('--resume continues an --out archive');
  if (flags.has('keep-empty') && out === undefined) return usage('--keep-empty applies to an --out archive');
  if (flags.has('keep-empty') && target.kind === 'style') return usage('--keep-empty: rendered tiles are never empty; it applies to the tiles of a --source');

  return {
    kind: 'seed',
    config: values.config,
    target,
    area,
    minZoom: zoom[0],
    maxZoom: zoom[1],
    format,
    scale,
    tileSize,
    out,
    warm,
    concurrency,
    resume: flags.has('resume'),
    dryRun,
    keepEmpty: flags.has('keep-empty'),
  };
}
