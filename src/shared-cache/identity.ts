// What a cached image or tile depends on, hashed so that every machine serving the same files with the same
// image-changing settings computes the same value, whatever its ports, paths, host name or cache directories.
// The shared cache (and the local caches of rendered images) key entries by it: two machines of a fleet share
// entries, and a changed style, sprite, data file or image setting starts a new key space (old entries expire).
// Not a replaced PMTiles or MBTiles archive: its changed tiles are expired instead (expire/archives.ts), so the
// entries of every area it did not change stay valid.
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import type { Config, SourceConfig } from '../config/schema.js';
import { fileFingerprint } from '../config/file-fingerprint.js';
import type { AppState } from '../state/app-state.js';
import type { LoadedStyle } from '../styles/loaded-style.js';
import { VERSION } from '../version.js';

export { fileFingerprint };

/**
 * Render settings that only size or bound this machine's work (or name a local path): they never change a pixel,
 * and machines of a fleet may well set them differently. Every other render setting is part of the identity.
 */
const MACHINE_LOCAL_RENDER = new Set<string>([
  'pool_size',
  'pages_per_browser',
  'timeout_ms',
  'max_queue',
  'queue_timeout_ms',
  'max_pixels',
  'max_renders',
  'memory_cache_mb',
  'disk_cache_mb',
  'owner_routing',
  'chromium_path',
  // When and how expired tiles are drawn again changes when pixels are remade, never what they are.
  'stale_max_age_seconds',
  'rerender_expired',
  'rerender_max_zoom',
  'dirty_queue_size',
  'stale_threshold',
]);

/** `[postgres]` keys that say how to reach the database or how this machine uses it, not what the data is. */
const MACHINE_LOCAL_POSTGRES = new Set<string>(['connection_string', 'pool_size', 'pool_wait_timeout_ms', 'statement_timeout_ms', 'pool_pre_warm', 'ssl_mode', 'ssl_root_cert']);

const isUrl = (p: string) => /^[a-z][a-z0-9+.-]*:\/\//i.test(p);

/**
 * The version of a remote source's data being served now: its URL and the revision (ETag) the open archive is
 * pinned to. The source re-opens a replaced object and hands out a new revision, so keys built from this change
 * with the object, on every machine that opened the same object, without asking the store anything.
 */
function remoteData(state: AppState, id: string, url: string): string {
  const revision = state.sources?.get(id)?.info.revision;
  return revision === undefined ? url : `${url}@${revision}`;
}

/**
 * The revisions of every remote source of a state, as one string: cheap to build on each request (a few map
 * look-ups), and what the memoised identities below are checked against.
 */
export function remoteRevisions(state: AppState): string {
  let out = '';
  for (const [id, url] of remoteSources(state)) out += `${id}=${remoteData(state, id, url)}\n`;
  return out;
}

const remoteByState = new WeakMap<AppState, Map<string, string>>();

/** A state's remote sources (id to URL), found once per state: the identities above ask for them per request. */
function remoteSources(state: AppState): Map<string, string> {
  let found = remoteByState.get(state);
  if (!found) remoteByState.set(state, (found = new Map(state.config.sources.filter((s) => isUrl(s.path)).map((s) => [s.id, s.path]))));
  return found;
}

/**
 * Sources whose replaced data becomes an expiry of the tiles that changed (expire/archives.ts): PMTiles and MBTiles
 * archives, local or (PMTiles) remote. Their content stays out of the identity, or a replaced archive would start
 * a new key space and throw away the cached tiles of every area it did not change. A remote object's ETag is left
 * out too: a new ETag is diffed against the old object when the store still serves it, and expires the whole
 * source when it does not (its tiles are then answered stale while drawn again, not missed); a start on an
 * object replaced while the server was down is caught by the record of served versions (archives.json).
 */
function followedByExpiries(cfg: SourceConfig): boolean {
  return cfg.type === 'pmtiles' || (cfg.type === 'mbtiles' && !isUrl(cfg.path));
}

/** What a source's data contributes to an identity: nothing for archives that expiries follow (see above). */
function dataOf(state: AppState, cfg: SourceConfig): string | undefined {
  if (followedByExpiries(cfg)) return undefined;
  return isUrl(cfg.path) ? remoteData(state, cfg.id, cfg.path) : fileFingerprint(cfg.path);
}

/** What the configured sources serve: their settings and data fingerprints, without paths or connection details. */
function dataIdentity(state: AppState): unknown {
  const config = state.config;
  return {
    sources: config.sources.map((cfg) => {
      const { path: _path, ...rest } = cfg;
      return { ...rest, data: dataOf(state, cfg) };
    }),
    composites: config.composites,
    postgres: config.postgres && Object.fromEntries(Object.entries(config.postgres).filter(([k]) => !MACHINE_LOCAL_POSTGRES.has(k))),
  };
}

/** The settings of `[render]` that change pixels or bytes of rendered images. */
function renderIdentity(config: Config): unknown {
  return Object.fromEntries(Object.entries(config.render).filter(([k]) => !MACHINE_LOCAL_RENDER.has(k)).sort(([a], [b]) => a.localeCompare(b)));
}

/** Sprite files' bytes (small), when the style's sprites are local files. */
function spriteIdentity(style: LoadedStyle): string {
  if (!style.spriteBase) return '';
  const hash = createHash('sha256');
  for (const ext of ['.json', '.png', '@2x.json', '@2x.png']) {
    try {
      hash.update(ext).update(readFileSync(style.spriteBase + ext));
    } catch {
      hash.update(`${ext}:none`);
    }
  }
  return hash.digest('hex').slice(0, 32);
}

/** An identity computed for a state while its remote sources served these revisions. */
interface Memo<T> {
  revisions: string;
  value: T;
}

const dataByState = new WeakMap<AppState, Memo<string>>();
const styleByState = new WeakMap<AppState, Memo<Map<string, string>>>();

/**
 * Data and settings identity of a state, computed once per state snapshot and remote revision: a remote archive
 * replaced in its bucket changes it without a reload.
 */
function stateIdentity(state: AppState): string {
  const revisions = remoteRevisions(state);
  const memo = dataByState.get(state);
  let id = memo?.revisions === revisions ? memo.value : undefined;
  if (id === undefined) {
    // Font files are named by what they declare: their content decides what a render draws (left out when there
    // are none, so identities of services without font files stay as they were).
    const fontFiles = [...(state.fonts.files ?? new Map()).entries()].map(([name, f]) => `${name}:${f.version}`);
    const parts = JSON.stringify({ data: dataIdentity(state), render: renderIdentity(state.config), fonts: state.fonts.names, ...(fontFiles.length ? { font_files: fontFiles } : {}) });
    id = createHash('sha256').update(parts).digest('hex');
    dataByState.set(state, { revisions, value: id });
  }
  return id;
}

/**
 * Identity of a style's images in a state: the style file, its sprites, the data of every configured source, the
 * fonts' names, the image-changing render settings and the server version (another version may draw differently).
 */
export function styleIdentity(state: AppState, style: LoadedStyle): string {
  const revisions = remoteRevisions(state);
  let memo = styleByState.get(state);
  if (memo?.revisions !== revisions) styleByState.set(state, (memo = { revisions, value: new Map() }));
  const byStyle = memo.value;
  let id = byStyle.get(style.id);
  if (id === undefined) {
    id = createHash('sha256').update(`${VERSION}\n${style.hash}\n${spriteIdentity(style)}\n${stateIdentity(state)}`).digest('hex').slice(0, 16);
    byStyle.set(style.id, id);
  }
  return id;
}

const sourceByState = new WeakMap<AppState, Map<string, Memo<string | undefined>>>();

/**
 * Identity of one configured file source's transcoded tiles (its data, the compression settings that change the
 * bytes, the server version); undefined for sources whose data this cannot fingerprint (databases, uploads).
 */
export function sourceIdentity(state: AppState, sourceId: string): string | undefined {
  let bySource = sourceByState.get(state);
  if (!bySource) sourceByState.set(state, (bySource = new Map()));
  // A remote source's revision is looked up on every call: the archive may have been replaced since.
  const url = remoteSources(state).get(sourceId);
  const revisions = url === undefined ? '' : remoteData(state, sourceId, url);
  const memo = bySource.get(sourceId);
  if (memo?.revisions === revisions) return memo.value;
  const cfg = state.config.sources.find((s) => s.id === sourceId);
  let id: string | undefined;
  if (cfg) {
    const { path: _path, ...rest } = cfg;
    const c = state.config.compression;
    const parts = JSON.stringify({ version: VERSION, source: rest, data: dataOf(state, cfg), br: c.br_quality, zstd: c.zstd_level });
    id = createHash('sha256').update(parts).digest('hex').slice(0, 16);
  }
  bySource.set(sourceId, { revisions, value: id });
  return id;
}
