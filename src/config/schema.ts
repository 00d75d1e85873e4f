// The configuration schema. Every key of the TOML file is declared here with valibot; later capabilities add
// their sections to `ConfigSchema` below. Defaults live in the schema so that the typed Config is complete.
import * as v from 'valibot';
import { parseBind } from './bind.js';
import { isRemotePath, parseLocation } from './object-location.js';
import { invalidCidrs } from './cidr.js';
import { parseUrlTemplate } from './xyz-template.js';
import { parseLanguageTag } from './language-tag.js';

const port = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(65535));
const zoom = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(22));
const nonEmpty = v.pipe(v.string(), v.minLength(1));
/** A BCP 47 language tag, kept in its canonical case (`zh-hant` becomes `zh-Hant`). */
const languageTag = v.pipe(
  v.string(),
  v.check((s) => parseLanguageTag(s) !== undefined, 'a BCP 47 language tag (en, de-CH, zh-Hant, sr-Latn)'),
  v.transform((s) => parseLanguageTag(s)!.tag),
);
/** Ids appear in URL paths: keep them to characters that need no escaping and cannot mean a path or a composite. */
const id = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, 'an id of letters, digits, "_", "-" and "." (not starting with "." or "-")'),
);

/** Who may read a source or style (docs/access.md): anyone, a request with a valid key or JWT allowed it, or nobody over HTTP. */
export const ACCESS_LEVELS = ['public', 'key', 'closed'] as const;
const access = v.picklist(ACCESS_LEVELS, 'one of "public", "key", "closed"');

export const ServerSchema = v.object({
  host: v.optional(nonEmpty, '0.0.0.0'),
  port: v.optional(port, 8080),
  /** Base URL used in every URL the service hands out; default: the request's own scheme, host and port. */
  public_url: v.optional(v.pipe(v.string(), v.url('an absolute http(s) URL'))),
  cors_origins: v.optional(v.array(nonEmpty), ['*']),
  /** "auto": one HTTP worker process per core, at most 4; 1: a single process. */
  workers: v.optional(v.union([v.literal('auto'), v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(256))]), 'auto'),
  /** `host:port` of the admin listener (POST /__admin/reload); port 0, the default, means no admin listener. Not reloadable. */
  admin_bind: v.optional(v.pipe(v.string(), v.rawCheck(({ dataset, addIssue }) => {
    if (dataset.typed) {
      const parsed = parseBind(dataset.value);
      if (!parsed.ok) addIssue({ message: parsed.problem });
    }
  })), '127.0.0.1:0'),
  upload_dir: v.optional(nonEmpty),
  upload_max_size_mb: v.optional(v.pipe(v.number(), v.minValue(1)), 500),
  disable_render: v.optional(v.boolean(), false),
  /** No OGC API routes under /ogc (404, and absent from /openapi.json). */
  disable_ogc: v.optional(v.boolean(), false),
  /** Where the embed page, home page and viewers load maplibre-gl from: a pinned script host ("cdn") or this service ("local"). */
  embed_assets: v.optional(v.picklist(['cdn', 'local']), 'cdn'),
  /** Cache-Control of tiles and tile metadata. */
  tile_cache_control: v.optional(nonEmpty, 'public, max-age=86400'),
  /** Threads of this process's vector pool (MVT<->MLT transcoding, composites, queries); default: its share of the cores. */
  transcode_threads: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(256))),
  /** Time for a request's whole body to arrive, from its start; past it 408 and the connection ends. Not reloadable. */
  request_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(3_600_000)), 60_000),
  /**
   * Largest request line plus headers (node:http's maxHeaderSize); past it 431. Node's own default, 16 KiB, unless
   * raised: a static map's overlays in its URL count against it (the POST form takes them in the body). Not reloadable.
   */
  max_header_bytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024), v.maxValue(1_048_576)), 16_384),
  /** Reload when an archive, style, sprite or font file of the configuration changes on disk (as SIGHUP does). */
  watch: v.optional(v.boolean(), false),
  /**
   * V8's largest semi-space in MiB for each forked worker process (`--max-semi-space-size`); 0 leaves Node's own
   * (16). A request's short-lived objects die in the young generation when it is large enough, instead of being
   * copied and promoted (docs/operations.md). Not reloadable.
   */
  semi_space_mb: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1024)), 64),
});

/** GDAL's warp resampling methods (GDALResampleAlg names). */
export const RESAMPLING = ['nearest', 'bilinear', 'cubic', 'cubicspline', 'lanczos', 'average', 'rms', 'mode', 'min', 'max', 'med', 'q1', 'q3', 'sum'] as const;
const hexColor = v.pipe(v.string(), v.regex(/^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$/, 'a hex colour: #rgb, #rgba, #rrggbb or #rrggbbaa'));
const bounds = v.pipe(v.array(v.number()), v.length(4, 'four numbers: west, south, east, north'));

/** Colours for single-band rasters (COG/VRT sources and out-of-database rasters); see docs/rasters.md. */
export const ColormapSchema = v.object({
  map_type: v.optional(v.picklist(['discrete', 'continuous']), 'continuous'),
  rescale_mode: v.optional(v.picklist(['static', 'dynamic', 'none']), 'static'),
  nodata_color: v.optional(hexColor, '#00000000'),
  entries: v.pipe(v.array(v.object({ value: v.number(), color: hexColor })), v.minLength(1, 'a colormap needs at least one entry')),
});

/** Keys a source on object storage may set; they mean nothing for a local file (docs/storage-*.md). */
/** How elevations are packed into RGB tiles: Mapzen's terrarium or Mapbox's terrain-RGB (docs/terrain.md). */
export const DEM_ENCODINGS = ['terrarium', 'mapbox'] as const;
export const DemSchema = v.object({
  encoding: v.picklist(DEM_ENCODINGS, 'terrarium or mapbox'),
});

export const STORAGE_KEYS = ['endpoint', 'region', 'force_path_style', 'profile', 'access_key_id', 'secret_access_key', 'anonymous', 'account', 'account_key', 'sas_token', 'connection_string'] as const;
const S3_KEYS = ['endpoint', 'region', 'force_path_style', 'profile', 'access_key_id', 'secret_access_key', 'anonymous'];
const GS_KEYS = ['endpoint', 'force_path_style', 'access_key_id', 'secret_access_key', 'anonymous'];
const AZ_KEYS = ['endpoint', 'account', 'account_key', 'sas_token', 'connection_string', 'anonymous'];

/** The storage keys a path's scheme takes; none for local files (and http(s) URLs, which carry no credentials). */
function storageKeysOf(path: string): readonly string[] {
  const scheme = /^([a-z0-9]+):\/\//i.exec(path)?.[1]?.toLowerCase();
  return scheme === 's3' ? S3_KEYS : scheme === 'gs' ? GS_KEYS : scheme === 'az' ? AZ_KEYS : [];
}

/** Keys of a remote XYZ source (`type = "xyz"`, docs/xyz.md); none of them applies to other types. */
const XYZ_ENTRIES = {
  /** The tile URL template: `{z}`, `{x}`, `{y}` (or `{-y}`), optionally `{s}`. */
  url: v.optional(nonEmpty),
  /** What the upstream's tiles are; required (not sniffed: an upstream down at start must not stop the service). */
  format: v.optional(v.picklist(['pbf', 'mlt', 'png', 'jpg', 'webp'], 'one of "pbf", "mlt", "png", "jpg", "webp"')),
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
  headers: v.optional(v.record(v.pipe(v.string(), v.regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'a header name')), v.pipe(v.string(), v.regex(/^[^\r\n\0]*$/, 'a header value on one line')))),
  /** Header name to the name of an environment variable holding its value (an API key), read when the source opens. */
  headers_env: v.optional(
    v.record(
      v.pipe(v.string(), v.regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'a header name')),
      v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')),
    ),
  ),
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

/** What is wrong with an xyz source's keys (message and key), none when it is well formed. */
function xyzProblems(s: { url?: string; path?: string; format?: string; subdomains?: string[]; vector_layers?: unknown[]; [k: string]: unknown }): { key: string; message: string }[] {
  const out: { key: string; message: string }[] = [];
  if (s.path !== undefined) out.push({ key: 'path', message: 'an xyz source takes its tile URL template as url, not path' });
  if (s.url === undefined) out.push({ key: 'url', message: 'an xyz source needs url, a tile URL template such as "https://tiles.example.com/{z}/{x}/{y}.pbf"' });
  else {
    const t = parseUrlTemplate(s.url);
    if (typeof t === 'string') out.push({ key: 'url', message: t });
    else if (t.usesSubdomains && !s.subdomains) out.push({ key: 'subdomains', message: 'the url has {s}: list the subdomains it stands for, e.g. ["a", "b", "c"]' });
    else if (!t.usesSubdomains && s.subdomains) out.push({ key: 'subdomains', message: 'subdomains are given but the url has no {s}' });
  }
  if (s.format === undefined) out.push({ key: 'format', message: 'an xyz source needs format: "pbf", "mlt", "png", "jpg" or "webp"' });
  else if (s.vector_layers && s.format !== 'pbf' && s.format !== 'mlt') out.push({ key: 'vector_layers', message: 'vector_layers applies to pbf and mlt sources' });
  for (const key of STORAGE_KEYS) if (s[key] !== undefined) out.push({ key, message: `${key} does not apply to an xyz source (send credentials as headers_env)` });
  for (const key of ['resampling', 'colormap']) if (s[key] !== undefined) out.push({ key, message: `${key} applies to cog and vrt sources` });
  if (s.dem !== undefined) out.push({ key: 'dem', message: 'dem is not supported for xyz sources yet (an elevation source is a COG/VRT or a PMTiles/MBTiles archive)' });
  return out;
}

/** Keys of the data-file sources (`type = "geojson"` or `"geopackage"`, docs/files.md); none applies to other types. */
const FILE_ENTRIES = {
  /** GeoPackage: the feature tables served, each a layer; default: every feature table. */
  layers: v.optional(v.pipe(v.array(nonEmpty), v.minLength(1, 'list at least one table, or leave layers out for all'))),
  /** Properties carried in tiles and OGC API - Features; default: every property. */
  properties: v.optional(v.array(nonEmpty)),
  /** Tile extent (units per tile edge); default 4096. */
  extent: v.optional(v.pipe(v.number(), v.integer(), v.minValue(256), v.maxValue(65536))),
  /** Units beyond each tile edge that features are kept to (clipped there); default 64. */
  buffer: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(4096))),
  /** GeoJSON: the largest file held in memory, in MB; default 256. */
  max_size_mb: v.optional(v.pipe(v.number(), v.minValue(0.001))),
  /** GeoPackage, FlatGeobuf, GeoParquet: decoded features kept between requests, in MB (0: none); default 64. */
  feature_cache_mb: v.optional(v.pipe(v.number(), v.minValue(0))),
  /** Features read for one tile at most (each layer); the rest of a denser tile is left out. Default 200000. */
  max_features: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  /** Whether tile requests may carry `filter` (CQL2) and `properties` (docs/files.md); default true. */
  allow_filters: v.optional(v.boolean()),
  /** Longest `filter` a tile request may carry, in characters; default 2048 (as `[postgres] tile_filter_max_length`). */
  filter_max_length: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(16_384))),
  /** Most conditions, values and properties one tile filter may hold; default 64 (as `[postgres] tile_filter_max_terms`). */
  filter_max_terms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000))),
};

/** Source types read from a local data file and served as vector tiles made on request. */
export const FILE_SOURCE_TYPES = ['geojson', 'geopackage', 'flatgeobuf', 'geoparquet'] as const;

/** Data-file formats read by byte ranges, so also from http(s), s3://, gs:// and az:// URLs. */
const REMOTE_FILE_TYPES: readonly string[] = ['flatgeobuf', 'geoparquet'];

/** What is wrong with a data-file source's keys. */
function fileProblems(s: { type: string; path?: string; [k: string]: unknown }): { key: string; message: string }[] {
  const out: { key: string; message: string }[] = [];
  if (s.path !== undefined && isRemotePath(s.path) && !REMOTE_FILE_TYPES.includes(s.type)) out.push({ key: 'path', message: `a ${s.type} source is read from a local file (FlatGeobuf and GeoParquet can be remote)` });
  if (s.type !== 'geopackage' && s.layers !== undefined) out.push({ key: 'layers', message: 'layers applies to geopackage sources (GeoJSON, FlatGeobuf and GeoParquet files are one layer)' });
  if (s.type === 'geojson' && s.feature_cache_mb !== undefined) out.push({ key: 'feature_cache_mb', message: 'feature_cache_mb applies to geopackage, flatgeobuf and geoparquet sources (a GeoJSON file is in memory already)' });
  if (s.type !== 'geojson' && s.max_size_mb !== undefined) out.push({ key: 'max_size_mb', message: 'max_size_mb applies to geojson sources (the other formats are read through their spatial index, not held in memory)' });
  for (const key of ['resampling', 'colormap', 'dem']) if (s[key] !== undefined) out.push({ key, message: `${key} does not apply to a ${s.type} source (it serves vector tiles)` });
  return out;
}

/** A source's `path`: a file, or a remote URL whose shape is checked here so a typo fails at load, not at first use. */
const sourcePath = v.pipe(
  nonEmpty,
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed || !isRemotePath(dataset.value)) return;
    const parsed = parseLocation(dataset.value);
    if (typeof parsed === 'string') addIssue({ message: parsed });
  }),
);

export const SourceSchema = v.pipe(
  v.object({
    id,
    type: v.picklist(['pmtiles', 'mbtiles', 'cog', 'vrt', 'xyz', ...FILE_SOURCE_TYPES]),
    /**
     * A file path (relative to the config file); or for PMTiles an http(s), s3://, gs:// or az:// URL read with
     * range requests; or for COG/VRT an s3://, gs://, az:// or http(s) URL read through GDAL. Not for xyz (it takes
     * `url`; after parsing, `path` holds that template, so code that lists remote sources sees it as one).
     */
    path: v.optional(sourcePath),
    ...XYZ_ENTRIES,
    ...FILE_ENTRIES,
    /** Object storage (s3://, gs://, az://): the store's base URL (S3-compatible stores, an Azure endpoint). */
    endpoint: v.optional(v.pipe(v.string(), v.url('an absolute URL such as https://minio.example.com:9000'))),
    /** s3://: the bucket's region (default: the SDK's chain, else us-east-1). */
    region: v.optional(nonEmpty),
    /** s3://, gs://: bucket in the URL path, not the host name (default: true when an endpoint is set). */
    force_path_style: v.optional(v.boolean()),
    /** s3://: a profile of the shared AWS config and credentials files. */
    profile: v.optional(nonEmpty),
    /** s3:// (an access key) and gs:// (an HMAC key); write secrets as `${VAR}`. */
    access_key_id: v.optional(nonEmpty),
    secret_access_key: v.optional(nonEmpty),
    /** Object storage: read without credentials (a public bucket or container). */
    anonymous: v.optional(v.boolean()),
    /** az://: the storage account, its key, a SAS token or a whole connection string (secrets as `${VAR}`). */
    account: v.optional(nonEmpty),
    account_key: v.optional(nonEmpty),
    sas_token: v.optional(nonEmpty),
    connection_string: v.optional(nonEmpty),
    name: v.optional(v.string()),
    attribution: v.optional(v.string()),
    description: v.optional(v.string()),
    minzoom: v.optional(zoom),
    maxzoom: v.optional(zoom),
    /** cog/vrt: how pixels are resampled when warped to web mercator (default bilinear). */
    resampling: v.optional(v.picklist(RESAMPLING)),
    /** cog/vrt, single-band data: value-to-colour mapping. */
    colormap: v.optional(ColormapSchema),
    /**
     * The source holds elevation (docs/terrain.md): a single-band COG/VRT in metres, or an archive of encoded
     * DEM tiles. Its tiles are served in this encoding, and hillshade, contours and the elevation API come with it.
     */
    dem: v.optional(DemSchema),
    /** Who may read it (docs/access.md); default: auth.default_access. */
    access: v.optional(access),
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const s = dataset.value;
    const at = (key: string): [v.IssuePathItem] => [{ type: 'object', origin: 'value', input: s, key, value: (s as Record<string, unknown>)[key] }];
    if (s.type === 'xyz') {
      for (const problem of xyzProblems(s)) addIssue({ message: problem.message, path: at(problem.key) });
      for (const key of Object.keys(FILE_ENTRIES)) {
        if ((s as Record<string, unknown>)[key] !== undefined) addIssue({ message: `${key} applies to data-file sources (type = ${FILE_SOURCE_TYPES.map((t) => `"${t}"`).join(', ')}) only`, path: at(key) });
      }
      return;
    }
    if (s.path === undefined) {
      addIssue({ message: `missing: a ${s.type} source needs a path (a file or a URL)`, path: at('path') });
      return;
    }
    for (const key of Object.keys(XYZ_ENTRIES)) {
      if ((s as Record<string, unknown>)[key] !== undefined) addIssue({ message: `${key} applies to type = "xyz" sources only`, path: at(key) });
    }
    if ((FILE_SOURCE_TYPES as readonly string[]).includes(s.type)) {
      for (const problem of fileProblems(s)) addIssue({ message: problem.message, path: at(problem.key) });
    } else {
      for (const key of Object.keys(FILE_ENTRIES)) {
        if ((s as Record<string, unknown>)[key] !== undefined) addIssue({ message: `${key} applies to data-file sources (type = "geojson" or "geopackage") only`, path: at(key) });
      }
    }
    if (s.type === 'mbtiles' && isRemotePath(s.path)) {
      addIssue({ message: 'MBTiles is SQLite and is read from a local file only; serve a remote archive as PMTiles', path: [{ type: 'object', origin: 'value', input: s, key: 'path', value: s.path }] });
    }
    if (s.dem && s.colormap) {
      addIssue({ message: 'dem and colormap exclude each other: an elevation source serves encoded elevations (style its colours with a color-relief layer)', path: [{ type: 'object', origin: 'value', input: s, key: 'dem', value: s.dem }] });
    }
    const allowed = storageKeysOf(s.path);
    for (const key of STORAGE_KEYS) {
      if (s[key] === undefined || allowed.includes(key)) continue;
      const scheme = /^([a-z0-9]+):\/\//i.exec(s.path)?.[1]?.toLowerCase();
      const where = scheme && storageKeysOf(s.path).length > 0 ? `an ${scheme}:// path` : 'this path';
      addIssue({ message: `${key} does not apply to ${where} (${allowed.length ? `it takes ${allowed.join(', ')}` : 'only s3://, gs:// and az:// sources take storage keys'})`, path: [{ type: 'object', origin: 'value', input: s, key, value: s[key] }] });
    }
  }),
  // xyz sources keep their template in `path` too: every source has a path (a file or a URL) after parsing.
  v.transform((s) => ({ ...s, path: (s.path ?? s.url) as string })),
);

export const StyleSchema = v.pipe(
  v.object({
    id,
    path: nonEmpty,
    name: v.optional(v.string()),
    /** A folder of SVG icons the style's sprite sheets are built from (names: the file names without `.svg`). */
    sprite_dir: v.optional(nonEmpty),
    /** Build the sheets of `sprite_dir` as signed distance fields, so `icon-color` recolours the icons. */
    sdf: v.optional(v.boolean()),
    /** Who may read it and its renderings (docs/access.md); default: auth.default_access, or stricter when a source it uses is. */
    access: v.optional(access),
    /** A text drawn in the bottom-left corner of its static maps (a request's `watermark` replaces it). */
    watermark: v.optional(v.pipe(v.string(), v.maxLength(200))),
    /**
     * The languages its labels may be asked in (`?lang=`, docs/styles.md "Labels in the reader's language"): BCP 47
     * tags, or `"*"` for any; `[]` turns languages off for this style.
     */
    languages: v.optional(v.array(v.union([v.literal('*'), languageTag])), ['*']),
    /** The language of a request that names none (and whose Accept-Language, if honoured, matches none); unset: the style as written. */
    default_language: v.optional(languageTag),
    /** Honour the Accept-Language header when a request has no `lang` (answers then carry `Vary: Accept-Language`). */
    accept_language: v.optional(v.boolean(), false),
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed || !dataset.value.sdf || dataset.value.sprite_dir !== undefined) return;
    addIssue({ message: 'sdf applies to sprites built from sprite_dir; set sprite_dir too', path: [{ type: 'object', origin: 'value', input: dataset.value, key: 'sdf', value: true }] });
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const { languages, default_language: lang, accept_language: accept } = dataset.value;
    const at = (key: string, value: unknown): [v.ObjectPathItem] => [{ type: 'object', origin: 'value', input: dataset.value, key, value }];
    if (languages.length === 0 && lang !== undefined) addIssue({ message: 'default_language needs languages; languages = [] turns them off', path: at('default_language', lang) });
    else if (lang !== undefined && !languages.includes('*') && !languages.includes(lang)) {
      addIssue({ message: `default_language "${lang}" is not one of languages (${languages.join(', ')})`, path: at('default_language', lang) });
    }
    if (languages.length === 0 && accept) addIssue({ message: 'accept_language needs languages; languages = [] turns them off', path: at('accept_language', accept) });
  }),
);

/** A named composite: vector sources served merged as one (`/data/{id}/{z}/{x}/{y}.pbf`). */
export const CompositeSchema = v.object({
  id,
  sources: v.pipe(v.array(id), v.minLength(1, 'a composite needs at least one source')),
  /** Who may read it (docs/access.md); default: the strictest of auth.default_access and its members' access. */
  access: v.optional(access),
});

export const CacheSchema = v.object({
  enabled: v.optional(v.boolean(), true),
  max_size_mb: v.optional(v.pipe(v.number(), v.minValue(0)), 256),
  ttl_seconds: v.optional(v.pipe(v.number(), v.minValue(0)), 3600),
  /** Scratch and state directory (rendered-tile disk cache and friends); default: the OS temp dir. */
  dir: v.optional(nonEmpty),
  /**
   * A Redis server the machines of a fleet share rendered images and transcoded tiles through
   * (`redis://[:password@]host:port/db`, `rediss://` for TLS); see docs/deployment.md.
   */
  shared: v.optional(
    v.pipe(
      nonEmpty,
      v.check((s) => /^rediss?:\/\/[^\s]+$/.test(s) && URL.canParse(s), 'a Redis URL such as redis://cache-host:6379/0 (rediss:// for TLS)'),
    ),
  ),
  /** Shared entries expire after this many seconds (Redis's own maxmemory policy caps the size). */
  shared_ttl_seconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(365 * 86_400)), 86_400),
  /** Longest wait for one shared-cache command; past it the machine renders (or reads) on its own. */
  shared_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000)), 100),
});

export const CompressionSchema = v.object({
  enabled: v.optional(v.boolean(), true),
  br_quality: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(11)), 4),
  zstd_level: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(22)), 3),
});

/** Server-side rendering (raster style tiles, static maps, social cards); see docs/rendering.md. */
export const RenderSchema = v.object({
  /** "auto": MapLibre Native when its module loads, else headless Chromium when a browser is found. */
  backend: v.optional(v.picklist(['auto', 'native', 'chromium']), 'auto'),
  /** Renderers (Chromium pages, native maps) of this process; default: its share of the cores (config/sizing.ts). */
  pool_size: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(256))),
  /** Chromium only: pages (renderers) per browser. The pages of a browser share its one GPU process (measured: docs/rendering.md). */
  pages_per_browser: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(64)), 2),
  /** A render running longer fails (503) and its renderer is destroyed and replaced. */
  timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(10), v.maxValue(600_000)), 30_000),
  /** Renders waiting for a renderer; beyond this, 503 with Retry-After. */
  max_queue: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(100_000)), 256),
  /** Longest wait for a renderer; a render still waiting then is dropped and answered 503 with Retry-After. */
  queue_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(600_000)), 10_000),
  /** Largest image a request may ask for, in device pixels (width x height x scale²); beyond it 400. */
  max_pixels: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000_000_000)), 4096 * 4096),
  /** A renderer is recycled (browser or native map restarted) after this many renders. */
  max_renders: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 2000),
  /**
   * Raster style tiles are rendered in blocks of metatile x metatile tiles and cut. "auto": the tiles asked for
   * together are drawn in one frame (a lone tile as a 2x2 metatile, a view's tiles up to 4x4; docs/rendering.md).
   */
  metatile: v.optional(v.union([v.literal('auto'), v.picklist([1, 2, 4])]), 'auto'),
  /** Pixels rendered around a metatile and cut away, so labels at tile edges are placed as their neighbours place them. */
  tile_buffer: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(256)), 32),
  /** Rendered tiles kept in memory by each process. */
  memory_cache_mb: v.optional(v.pipe(v.number(), v.minValue(0)), 64),
  /** Rendered tiles kept on disk under [cache] dir, shared by all processes; 0 disables the disk cache. */
  disk_cache_mb: v.optional(v.pipe(v.number(), v.minValue(0)), 1024),
  /** zlib level of rendered PNGs: 3 costs about half the CPU of 6 for a few percent more bytes (docs/rendering.md). */
  png_compression: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(9)), 3),
  jpeg_quality: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100)), 85),
  webp_quality: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100)), 85),
  /** AVIF quality when a request gives none (libheif/aom through sharp; its own default is 50). */
  avif_quality: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100)), 50),
  /**
   * Chromium only: the software GL stack under WebGL. "auto" takes the fastest that passes its canary frame here:
   * lavapipe (Mesa's Vulkan rasteriser), then egl (Mesa's llvmpipe through EGL), then SwiftShader (docs/rendering.md).
   */
  gl: v.optional(v.picklist(['auto', 'lavapipe', 'egl', 'swiftshader']), 'auto'),
  /**
   * With several worker processes, each 4x4 block of tiles is drawn by one owner process; the others forward to it
   * (its pages keep the neighbourhood's parsed source tiles). Off: every process draws what it is asked for.
   */
  owner_routing: v.optional(v.boolean(), true),
  /**
   * Who encodes rendered tiles. "browser": the Chromium page cuts and encodes each tile of a frame with the browser's
   * own encoders, so only encoded bytes leave it (the native backend falls back to sharp); "sharp": the frame's raw
   * pixels come to Node and sharp cuts and encodes them (`png_compression` applies). docs/rendering.md, "Encoding".
   */
  tile_encoder: v.optional(v.picklist(['browser', 'sharp']), 'browser'),
  /** Chromium only: in pitch-0 frames draw fill-extrusion layers as flat fills of their lit roof colour (much faster). */
  flat_extrusions: v.optional(v.boolean(), true),
  /** The Chromium (or Chrome) executable; default: CHROMIUM_PATH, then the usual Debian and Chrome locations. */
  chromium_path: v.optional(nonEmpty),
  /** Static maps draw the attribution of the style's sources in the bottom-right corner (`attribution=false` per request). */
  static_attribution: v.optional(v.boolean(), true),
  /** Hosts (`name` or `name:port`) whose http(s) images static-map markers may show; no other host is ever contacted. */
  marker_hosts: v.optional(
    v.array(v.pipe(nonEmpty, v.check((h) => /^[A-Za-z0-9.-]+(?::\d{1,5})?$|^\[[0-9A-Fa-f:.]+\](?::\d{1,5})?$/.test(h), 'a host name or host:port, without scheme or path'))),
    [],
  ),
  /** Largest marker image (from a marker host or the files directory), bytes; a larger one is refused (400). */
  marker_max_bytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(16 * 1024 * 1024)), 256 * 1024),
  /** Longest wait for a marker image from a marker host; a slower one is refused (400). */
  marker_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(60_000)), 3000),
});

/** Metrics (pull listener, OTLP push) and traces (OTLP); see docs/metrics.md. Not reloadable (spec). */
export const TelemetrySchema = v.object({
  enabled: v.optional(v.boolean(), false),
  /** OTLP gRPC endpoint, e.g. http://collector:4317. */
  endpoint: v.optional(v.pipe(v.string(), v.url('an absolute URL such as http://collector:4317')), 'http://localhost:4317'),
  service_name: v.optional(nonEmpty, 'tileserver-ts'),
  sample_rate: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1)), 1),
  metrics_enabled: v.optional(v.boolean(), true),
  /** Fractions are allowed (tests push every fraction of a second). */
  metrics_export_interval_secs: v.optional(v.pipe(v.number(), v.minValue(0.1), v.maxValue(86_400)), 60),
  /** `host:port` or `[ipv6]:port` of the metrics pull listener (parsed by telemetry/bind.ts); unset: no listener. */
  scrape_bind: v.optional(v.pipe(v.string(), v.rawCheck(({ dataset, addIssue }) => {
    if (dataset.typed) {
      const parsed = parseBind(dataset.value);
      if (!parsed.ok) addIssue({ message: parsed.problem });
    }
  }))),
  scrape_path: v.optional(v.pipe(v.string(), v.regex(/^\/[A-Za-z0-9._~!$&'()*+,;=:@\/-]*$/, 'an absolute URL path such as /metrics')), '/metrics'),
  metrics_label_cardinality: v.optional(v.picklist(['strict', 'verbose']), 'strict'),
});

const pgIdent = nonEmpty;
const tileExtent = v.pipe(v.number(), v.integer(), v.minValue(256), v.maxValue(65536));

/** `[[postgres.tables]]`: a PostGIS table served as MVT. */
export const PgTableSchema = v.object({
  id,
  schema: v.optional(pgIdent, 'public'),
  table: pgIdent,
  /** Detected (the first geometry column) when omitted. */
  geometry_column: v.optional(pgIdent),
  id_column: v.optional(pgIdent),
  /** Columns carried as feature properties; default: every column other than the geometry (and id) column. */
  properties: v.optional(v.array(pgIdent)),
  extent: v.optional(tileExtent, 4096),
  buffer: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(4096)), 64),
  minzoom: v.optional(zoom, 0),
  maxzoom: v.optional(zoom, 22),
  /** Computed from the data when omitted. */
  bounds: v.optional(bounds),
  max_features: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  /** Whether tile requests may carry `filter` (CQL2) and `properties` (docs/postgres.md, "Filtered tiles"); default true. */
  allow_filters: v.optional(v.boolean()),
  name: v.optional(v.string()),
  attribution: v.optional(v.string()),
  description: v.optional(v.string()),
  /** Who may read it (docs/access.md); default: auth.default_access. */
  access: v.optional(access),
});

/** What every source served by a database function has: where the function is and the tiles it covers. */
const functionSourceEntries = {
  id,
  schema: v.optional(pgIdent, 'public'),
  function: v.optional(pgIdent),
  name: v.optional(v.string()),
  minzoom: v.optional(zoom, 0),
  maxzoom: v.optional(zoom, 22),
  bounds: v.optional(bounds),
  /** Who may read it (docs/access.md); default: auth.default_access. */
  access: v.optional(access),
};

/** `[[postgres.functions]]`: a function of (z, x, y) or (z, x, y, query json) returning an MVT bytea. */
export const PgFunctionSchema = v.object({
  ...functionSourceEntries,
  attribution: v.optional(v.string()),
  description: v.optional(v.string()),
});

/** `[[postgres.outdb_rasters]]`: a function returning raster file paths for a tile (spec: out-of-database raster source). */
export const OutdbRasterSchema = v.object({
  ...functionSourceEntries,
  resampling: v.optional(v.picklist(RESAMPLING), 'bilinear'),
  colormap: v.optional(ColormapSchema),
  /** The catalogue's files hold elevation in metres: tiles are encoded elevations, with the terrain products (docs/terrain.md). */
  dem: v.optional(DemSchema),
});

/** `[postgres]`: one connection pool per process; see docs/postgres.md. */
export const PostgresSchema = v.object({
  connection_string: nonEmpty,
  /** Connections per process. */
  pool_size: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000)), 10),
  /** A query waiting longer than this for a free connection fails with 503. */
  pool_wait_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 5000),
  /** Queries running longer are cancelled by the server (503); 0 leaves the server's own setting. */
  statement_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0)), 10_000),
  /** Open every connection of the pool at start-up rather than on demand. */
  pool_pre_warm: v.optional(v.boolean(), false),
  ssl_mode: v.optional(v.picklist(['disable', 'prefer', 'require', 'verify-ca', 'verify-full'])),
  ssl_root_cert: v.optional(nonEmpty),
  /** Publish every readable table with a geometry column and every function with a tile signature. */
  auto_publish: v.optional(v.boolean(), false),
  /** Longest `filter` a tile request may carry, in characters (filters of OGC items are capped by the parser alone). */
  tile_filter_max_length: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(16_384)), 2048),
  /** Most conditions, values and properties one tile filter may hold: each makes every tile's query dearer. */
  tile_filter_max_terms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000)), 64),
  tables: v.optional(v.array(PgTableSchema), []),
  functions: v.optional(v.array(PgFunctionSchema), []),
  outdb_rasters: v.optional(v.array(OutdbRasterSchema), []),
});

/** `[raster]`: the GDAL worker-thread pool (COG/VRT and out-of-database raster tiles). */
export const RasterSchema = v.object({
  /** Threads of this process; default: its share of the cores. */
  pool_size: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(256))),
  /** Tiles waiting for a thread, per thread; beyond this, 503 with Retry-After. */
  max_queue_per_thread: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10_000)), 64),
  /** Opened datasets kept per thread (closed on eviction and on reload). */
  dataset_cache: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000)), 64),
  /** Edge of a raster tile in pixels. */
  tile_size: v.optional(v.picklist([256, 512]), 256),
});

/** `[terrain]`: limits of the elevation API (docs/terrain.md). */
export const TerrainSchema = v.object({
  /** Points one batch request may ask for. */
  max_points: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000_000)), 10_000),
  /** Samples one profile may ask for. */
  max_profile_samples: v.optional(v.pipe(v.number(), v.integer(), v.minValue(2), v.maxValue(1_000_000)), 10_000),
  /** Longest profile line, in kilometres along the ground. */
  max_profile_km: v.optional(v.pipe(v.number(), v.minValue(0.001), v.maxValue(40_075)), 1000),
  /** zlib level of hillshade PNGs (0-9): shaded relief is smooth, and level 1 costs half of level 3 for about a tenth more bytes. */
  png_compression: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(9)), 1),
});

/** `[storage]`: how remote sources (s3://, gs://, az://, http(s) PMTiles) read their store; docs/storage-s3.md. */
export const StorageSchema = v.object({
  /** One request to the store may take this long, body included; past it the tile answers 503. */
  read_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(50), v.maxValue(600_000)), 10_000),
  /** Further attempts, with exponential back-off, after a 5xx, throttling or a network error. */
  read_retries: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10)), 3),
  /** Requests to the store in flight at once, per source; more wait their turn. */
  max_concurrent_reads: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1024)), 16),
});

/** `[mcp.oauth]`: OAuth 2.1 for `/mcp` (authorization code with PKCE, dynamic client registration); see docs/mcp.md. */
export const McpOAuthSchema = v.object({
  enabled: v.optional(v.boolean(), false),
  /** The authorization server's identifier and the base of its endpoints; default: server.public_url, else each request's own origin. */
  issuer_url: v.optional(v.pipe(v.string(), v.url('an absolute http(s) URL'), v.regex(/^https?:\/\/[^?#]*$/, 'an http(s) URL without query or fragment'))),
  /** Lifetime of an access token (a signed JWT); the refresh token lives on until it is used or revoked. */
  token_ttl_secs: v.optional(v.pipe(v.number(), v.integer(), v.minValue(10), v.maxValue(86_400)), 3600),
  /** SQLite file of registered clients and refresh-token sessions; default: mcp-oauth.sqlite under [cache] dir. */
  store_path: v.optional(nonEmpty),
  /** What the operator types on the consent page to grant access; `${VAR}` keeps it out of the file. Required when enabled. */
  consent_secret: v.optional(v.pipe(v.string(), v.minLength(8, 'at least 8 characters'))),
  /** Wrong consent secrets accepted per minute, over all processes, before the page answers 429. */
  consent_attempts_per_minute: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000)), 5),
});

/** `[mcp]`: the Model Context Protocol endpoint `/mcp` and its tools; see docs/mcp.md. */
export const McpSchema = v.object({
  enabled: v.optional(v.boolean(), false),
  /** A static bearer token `/mcp` requires (`${VAR}` allowed); unset and OAuth off: `/mcp` is open like the other routes. */
  auth_token: v.optional(v.pipe(v.string(), v.minLength(16, 'at least 16 characters'))),
  oauth: v.optional(McpOAuthSchema, {}),
});

/** Glob patterns of ids (`*` any run of characters): `"osm-*"`, `"*"`. */
const patterns = v.array(v.pipe(v.string(), v.minLength(1), v.maxLength(256)));

/** One API key of `[[auth.keys]]` or of `auth.keys_file`: its SHA-256 and what it may read (docs/access.md). */
export const AuthKeySchema = v.object({
  /** Safe to log and to label metrics with: never the key. */
  name: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_.:@-]{1,64}$/, 'a name of 1 to 64 letters, digits, "_", ".", ":", "@" or "-"')),
  /** SHA-256 of the key, hex (`tileserver-ts key new` makes both). */
  hash: v.pipe(v.string(), v.regex(/^[0-9a-fA-F]{64}$/, 'the SHA-256 of the key as 64 hex digits'), v.toLowerCase()),
  /** Sources (and composites) it may read; default every one. */
  sources: v.optional(patterns, ['*']),
  /** Styles it may read (their style.json, sprites, renderings); default every one. */
  styles: v.optional(patterns, ['*']),
  /** Origins (`https://app.example.com`, `https://*.example.com`) a browser may use it from; absent: any. */
  origins: v.optional(patterns),
  /** Rate class of the requests it makes (`[rate_limits.classes]`); absent: the default class. */
  rate_class: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(64))),
  /** RFC 3339 time from which it is refused. */
  expires: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/, 'an RFC 3339 time such as 2027-01-31T00:00:00Z'),
      v.check((s) => !Number.isNaN(Date.parse(s)), 'an RFC 3339 time such as 2027-01-31T00:00:00Z'),
    ),
  ),
});

/** JWS algorithms a token may be signed with; `none` is not among them. */
export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'HS256', 'HS384', 'HS512'] as const;

/** `[auth.jwt]`: bearer tokens signed by an identity provider (a JWKS) or with a shared secret (docs/access.md). */
export const AuthJwtSchema = v.object({
  /** A JSON Web Key Set file (read at start and on every reload). */
  jwks_file: v.optional(nonEmpty),
  /** A JSON Web Key Set written inline (`[[auth.jwt.jwks.keys]]`); `jwks_file` is read into it. Public keys only. */
  jwks: v.optional(v.object({ keys: v.pipe(v.array(v.record(v.string(), v.unknown())), v.minLength(1, 'a key set needs at least one key')) })),
  /** A JSON Web Key Set URL, fetched when a token names a key not yet known, cached and refreshed. */
  jwks_url: v.optional(v.pipe(v.string(), v.url('an absolute http(s) URL'), v.regex(/^https?:\/\//, 'an http(s) URL'))),
  /** The name of the environment variable holding an HMAC secret (HS256/384/512); never the secret itself. */
  secret_env: v.optional(v.pipe(v.string(), v.regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name'))),
  /** The `iss` every token must carry. */
  issuer: v.optional(nonEmpty),
  /** The `aud` every token must carry (one of them, when several are given). */
  audience: v.optional(v.union([nonEmpty, v.pipe(v.array(nonEmpty), v.minLength(1))])),
  /** Algorithms accepted; default the asymmetric ones with a JWKS, HS256 with a secret. */
  algorithms: v.optional(v.pipe(v.array(v.picklist(JWT_ALGORITHMS, `one of ${JWT_ALGORITHMS.join(', ')} ("none" is never accepted)`)), v.minLength(1))),
  /** Leeway for `exp` and `nbf`, in seconds. */
  clock_skew_s: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(3600)), 30),
  /** The claim holding what the token may read: `{sources: [...], styles: [...]}` (arrays or space-separated patterns). */
  scope_claim: v.optional(nonEmpty, 'tiles'),
  /** The claim holding the token's rate class. */
  rate_class_claim: v.optional(nonEmpty, 'rate_class'),
});

/** `[auth]`: who may read what is served (docs/access.md). Absent: everything is public, as before. */
export const AuthSchema = v.object({
  /** Access of every source and style that does not set its own. */
  default_access: v.optional(access, 'public'),
  keys: v.optional(v.array(AuthKeySchema), []),
  /** More keys: a TOML file of `[[keys]]` or a JSON file `{"keys": [...]}` (or a bare array), re-read on every reload. */
  keys_file: v.optional(nonEmpty),
  jwt: v.optional(AuthJwtSchema),
});
/**
 * One budget of a rate class: a token bucket refilled at `rate` answers per second that holds at most `burst`.
 * Served as rate-limiter-flexible's window of `burst / rate` seconds (whole seconds) holding `burst` points; see
 * docs/rate-limits.md, "How a budget is counted".
 */
export const RateBudgetSchema = v.pipe(
  v.object({
    rate: v.pipe(v.number(), v.minValue(0.001, 'at least 0.001 per second'), v.maxValue(1_000_000)),
    /** Default: the rate (one second's worth), at least 1. */
    burst: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100_000_000))),
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const { rate, burst } = dataset.value;
    if (burst !== undefined && burst < rate) {
      addIssue({ message: `burst (${burst}) must be at least the rate (${rate}): budgets are counted in windows of whole seconds`, path: [{ type: 'object', origin: 'value', input: dataset.value, key: 'burst', value: burst }] });
    }
    if (burst !== undefined && burst / rate > 86_400) {
      addIssue({ message: `burst / rate is ${Math.round(burst / rate)} s: a bucket must refill within a day (86400 s)`, path: [{ type: 'object', origin: 'value', input: dataset.value, key: 'burst', value: burst }] });
    }
  }),
);

/** A named rate class: what its holders may ask for. A budget left out is not limited. */
export const RateClassSchema = v.object({
  /** Stored and cached tiles, TileJSON, styles, fonts, sprites, pages and every other route not listed as expensive. */
  cheap: v.optional(RateBudgetSchema),
  /** Renders, static maps, social cards, transcodes, uploads, elevation, hillshade and contours (docs/rate-limits.md). */
  expensive: v.optional(RateBudgetSchema),
});

const rateClassName = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, 'a class name of letters, digits, "_", "-" and "."'), v.maxLength(64));

/** `[rate_limits]`: per-client budgets shared by a fleet (docs/rate-limits.md). Absent: no limits and no headers. */
export const RateLimitsSchema = v.pipe(
  v.object({
    enabled: v.optional(v.boolean(), true),
    classes: v.optional(v.record(rateClassName, RateClassSchema), {}),
    /** The class of an API key or token that names none; unset: such requests are not limited. */
    default_class: v.optional(rateClassName),
    /** The class of requests without credentials, limited per client address; unset: they are not limited. */
    anonymous_class: v.optional(rateClassName),
    /** Peers (CIDR ranges or addresses) whose `X-Forwarded-For` is believed: load balancers, CDNs, reverse proxies. */
    trusted_proxies: v.optional(
      v.pipe(
        v.array(v.string()),
        v.maxLength(1024),
        v.rawCheck(({ dataset, addIssue }) => {
          if (!dataset.typed) return;
          const bad = invalidCidrs(dataset.value);
          if (bad.length) addIssue({ message: `not an address or CIDR range: ${bad.map((b) => JSON.stringify(b)).join(', ')}` });
        }),
      ),
      [],
    ),
    /** Share the budgets through Redis: `[rate_limits] redis`, else `[cache] shared`. false: each machine counts alone. */
    shared: v.optional(v.boolean(), true),
    /** The Redis the budgets are counted in; default: the fleet's shared cache (`[cache] shared`). */
    redis: v.optional(
      v.pipe(
        nonEmpty,
        v.check((s) => /^rediss?:\/\/[^\s]+$/.test(s) && URL.canParse(s), 'a Redis URL such as redis://cache-host:6379/0 (rediss:// for TLS)'),
      ),
    ),
    /** Longest wait for Redis per request; past it (or with Redis down) the machine counts alone. */
    redis_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000)), 100),
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const r = dataset.value;
    for (const key of ['default_class', 'anonymous_class'] as const) {
      const name = r[key];
      if (name !== undefined && !Object.hasOwn(r.classes, name)) {
        const known = Object.keys(r.classes);
        addIssue({ message: `${key} "${name}" is not a class of [rate_limits.classes] (${known.length ? `classes: ${known.join(', ')}` : 'none is configured'})`, path: [{ type: 'object', origin: 'value', input: r, key, value: name }] });
      }
    }
  }),
);

export const ConfigSchema = v.object({
  fonts: v.optional(nonEmpty),
  files: v.optional(nonEmpty),
  server: v.optional(ServerSchema, {}),
  sources: v.optional(v.array(SourceSchema), []),
  styles: v.optional(v.array(StyleSchema), []),
  composites: v.optional(v.array(CompositeSchema), []),
  cache: v.optional(CacheSchema, {}),
  compression: v.optional(CompressionSchema, {}),
  render: v.optional(RenderSchema, {}),
  telemetry: v.optional(TelemetrySchema, {}),
  postgres: v.optional(PostgresSchema),
  raster: v.optional(RasterSchema, {}),
  storage: v.optional(StorageSchema, {}),
  terrain: v.optional(TerrainSchema, {}),
  mcp: v.optional(McpSchema, {}),
  auth: v.optional(AuthSchema),
  rate_limits: v.optional(RateLimitsSchema),
});

export type Config = v.InferOutput<typeof ConfigSchema>;
export type ServerConfig = v.InferOutput<typeof ServerSchema>;
export type SourceConfig = v.InferOutput<typeof SourceSchema>;
export type StyleConfig = v.InferOutput<typeof StyleSchema>;
export type CompositeConfig = v.InferOutput<typeof CompositeSchema>;
export type CacheConfig = v.InferOutput<typeof CacheSchema>;
export type CompressionConfig = v.InferOutput<typeof CompressionSchema>;
export type RenderConfig = v.InferOutput<typeof RenderSchema>;
export type TelemetryConfig = v.InferOutput<typeof TelemetrySchema>;
export type ColormapConfig = v.InferOutput<typeof ColormapSchema>;
export type PostgresConfig = v.InferOutput<typeof PostgresSchema>;
export type PgTableConfig = v.InferOutput<typeof PgTableSchema>;
export type PgFunctionConfig = v.InferOutput<typeof PgFunctionSchema>;
export type OutdbRasterConfig = v.InferOutput<typeof OutdbRasterSchema>;
export type RasterConfig = v.InferOutput<typeof RasterSchema>;
export type StorageConfig = v.InferOutput<typeof StorageSchema>;
export type TerrainConfig = v.InferOutput<typeof TerrainSchema>;
export type DemConfig = v.InferOutput<typeof DemSchema>;
export type DemEncodingName = (typeof DEM_ENCODINGS)[number];
export type McpConfig = v.InferOutput<typeof McpSchema>;
export type AuthConfig = v.InferOutput<typeof AuthSchema>;
export type AuthKeyConfig = v.InferOutput<typeof AuthKeySchema>;
export type AuthJwtConfig = v.InferOutput<typeof AuthJwtSchema>;
export type AccessLevel = (typeof ACCESS_LEVELS)[number];
export type RateLimitsConfig = v.InferOutput<typeof RateLimitsSchema>;
export type RateBudgetConfig = v.InferOutput<typeof RateBudgetSchema>;
export type McpOAuthConfig = v.InferOutput<typeof McpOAuthSchema>;
export type Resampling = (typeof RESAMPLING)[number];
