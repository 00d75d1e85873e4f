// `type = "xyz"`: tiles fetched from a remote server by a URL template (docs/xyz.md). It has no `path`: after
// parsing, `path` holds the template too, so code that lists remote sources sees it as one.
import * as v from 'valibot';
import { bounds, envName, nonEmpty, zoom } from '../sections/common.js';
import { parseUrlTemplate } from '../xyz-template.js';
import { COMMON_ENTRIES, STORAGE_ENTRIES } from './common.js';
import type { KindConfig, Problem, SourceKind } from './kind.js';

const headerName = v.pipe(v.string(), v.regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'a header name'));

const XYZ_ENTRIES = {
  type: v.literal('xyz'),
  ...COMMON_ENTRIES,
  /** The tile URL template: `{z}`, `{x}`, `{y}` (or `{-y}`), optionally `{s}`. */
  url: nonEmpty,
  /** What the upstream's tiles are; required (not sniffed: an upstream down at start must not stop the service). */
  format: v.picklist(['pbf', 'mlt', 'png', 'jpg', 'webp'], 'one of "pbf", "mlt", "png", "jpg", "webp"'),
  /** Hosts `{s}` stands for, e.g. ["a", "b", "c"]. */
  subdomains: v.optional(v.pipe(v.array(v.pipe(v.string(), v.regex(/^[A-Za-z0-9.-]+$/, 'a host name part (letters, digits, "-", ".")'))), v.minLength(1))),
  /** "tms": `{y}` counts rows from the south (as `{-y}` does). */
  scheme: v.optional(v.picklist(['xyz', 'tms'])),
  bounds: v.optional(bounds),
  /** Vector sources: the layers, as TileJSON lists them (default: an empty list). */
  vector_layers: v.optional(
    v.array(v.object({ id: nonEmpty, fields: v.optional(v.record(v.string(), v.string())), description: v.optional(v.string()), minzoom: v.optional(zoom), maxzoom: v.optional(zoom) })),
  ),
  /** Header name to value, sent with every upstream request. Not for secrets: see headers_env. */
  headers: v.optional(v.record(headerName, v.pipe(v.string(), v.regex(/^[^\r\n\0]*$/, 'a header value on one line')))),
  /** Header name to the name of an environment variable holding its value (an API key), read when the source opens. */
  headers_env: v.optional(v.record(headerName, envName)),
  /** Longest wait for one upstream answer (each try), in ms; default 10000. */
  timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(600_000))),
  /** Upstream requests in flight per process; default 16. */
  max_concurrency: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1024))),
  /** Requests waiting for a slot per process; beyond it 503 with Retry-After. Default 256. */
  max_queue: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(100_000))),
  /** Further tries after a connection error or 5xx (never after 4xx or a timeout); default 1. */
  retries: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(5))),
  /** Last good tiles kept per process to answer (marked stale) when the upstream fails; 0: none. Default 16. */
  stale_cache_mb: v.optional(v.pipe(v.number(), v.minValue(0))),
};

export const xyz = {
  types: ['xyz'],
  entries: XYZ_ENTRIES,
  missing: {
    url: 'an xyz source needs url, a tile URL template such as "https://tiles.example.com/{z}/{x}/{y}.pbf"',
    format: 'an xyz source needs format: "pbf", "mlt", "png", "jpg" or "webp"',
  },
  ownKeysElsewhere: (key) => `${key} applies to type = "xyz" sources only`,
  refuses: (key) => {
    if (key === 'path') return 'an xyz source takes its tile URL template as url, not path';
    if (Object.hasOwn(STORAGE_ENTRIES, key)) return `${key} does not apply to an xyz source (send credentials as headers_env)`;
    if (key === 'resampling' || key === 'colormap') return `${key} applies to cog and vrt sources`;
    if (key === 'dem') return 'dem is not supported for xyz sources yet (an elevation source is a COG/VRT or a PMTiles/MBTiles archive)';
    return undefined;
  },
} satisfies SourceKind<typeof XYZ_ENTRIES>;

export function xyzProblems(s: KindConfig<typeof xyz>, problem: Problem): void {
  const t = parseUrlTemplate(s.url);
  if (typeof t === 'string') problem('url', t);
  else if (t.usesSubdomains && !s.subdomains) problem('subdomains', 'the url has {s}: list the subdomains it stands for, e.g. ["a", "b", "c"]');
  else if (!t.usesSubdomains && s.subdomains) problem('subdomains', 'subdomains are given but the url has no {s}');
  if (s.vector_layers && s.format !== 'pbf' && s.format !== 'mlt') problem('vector_layers', 'vector_layers applies to pbf and mlt sources');
}
