// Value shapes several sections share: ports, zooms, ids, access levels, colours, colormaps and DEM encodings.
// A section file takes its atoms from here so that an id or a zoom means the same thing wherever it is written.
import * as v from 'valibot';
import { parseBind } from '../bind.js';
import { parseLanguageTag } from '../language-tag.js';

export const port = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(65535));
export const zoom = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(22));
export const nonEmpty = v.pipe(v.string(), v.minLength(1));
/** A thread or process count as the pool settings take it. */
export const threadCount = v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(256));
export const bounds = v.pipe(v.array(v.number()), v.length(4, 'four numbers: west, south, east, north'));
export const tileExtent = v.pipe(v.number(), v.integer(), v.minValue(256), v.maxValue(65536));
export const tileBuffer = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(4096));
export const envName = v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'));
export const redisUrl = v.pipe(
  nonEmpty,
  v.check((s) => /^rediss?:\/\/[^\s]+$/.test(s) && URL.canParse(s), 'a Redis URL such as redis://cache-host:6379/0 (rediss:// for TLS)'),
);

/** `host:port` or `[ipv6]:port`, refused at load with the parser's own words. */
export const bindAddress = v.pipe(
  v.string(),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const parsed = parseBind(dataset.value);
    if (!parsed.ok) addIssue({ message: parsed.problem });
  }),
);

/** A BCP 47 language tag, kept in its canonical case (`zh-hant` becomes `zh-Hant`). */
export const languageTag = v.pipe(
  v.string(),
  v.check((s) => parseLanguageTag(s) !== undefined, 'a BCP 47 language tag (en, de-CH, zh-Hant, sr-Latn)'),
  v.transform((s) => parseLanguageTag(s)!.tag),
);

/** Ids appear in URL paths: keep them to characters that need no escaping and cannot mean a path or a composite. */
export const id = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, 'an id of letters, digits, "_", "-" and "." (not starting with "." or "-")'),
);

/** Who may read a source or style (docs/access.md): anyone, a request with a valid key or JWT allowed it, or nobody over HTTP. */
export const ACCESS_LEVELS = ['public', 'key', 'closed'] as const;
export const access = v.picklist(ACCESS_LEVELS, 'one of "public", "key", "closed"');

/** GDAL's warp resampling methods (GDALResampleAlg names). */
export const RESAMPLING = ['nearest', 'bilinear', 'cubic', 'cubicspline', 'lanczos', 'average', 'rms', 'mode', 'min', 'max', 'med', 'q1', 'q3', 'sum'] as const;
const hexColor = v.pipe(v.string(), v.regex(/^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$/, 'a hex colour: #rgb, #rgba, #rrggbb or #rrggbbaa'));

/** Colours for single-band rasters (COG/VRT sources and out-of-database rasters); see docs/rasters.md. */
export const ColormapSchema = v.object({
  map_type: v.optional(v.picklist(['discrete', 'continuous']), 'continuous'),
  rescale_mode: v.optional(v.picklist(['static', 'dynamic', 'none']), 'static'),
  nodata_color: v.optional(hexColor, '#00000000'),
  entries: v.pipe(v.array(v.object({ value: v.number(), color: hexColor })), v.minLength(1, 'a colormap needs at least one entry')),
});

/** How elevations are packed into RGB tiles: Mapzen's terrarium or Mapbox's terrain-RGB (docs/terrain.md). */
export const DEM_ENCODINGS = ['terrarium', 'mapbox'] as const;
export const DemSchema = v.object({
  encoding: v.picklist(DEM_ENCODINGS, 'terrarium or mapbox'),
});

/** A key path item valibot puts on an issue, for checks that blame one key of the object they look at. */
export function keyPath(input: object, key: string): [v.ObjectPathItem] {
  return [{ type: 'object', origin: 'value', input: input as Record<string, unknown>, key, value: (input as Record<string, unknown>)[key] }];
}
