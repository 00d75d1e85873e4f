// The browser map library of the embed page, the home page and the viewers: maplibre-gl (and, for the inspect
// view, @maplibre/maplibre-gl-inspect) exactly as installed from npm. `server.embed_assets` says where pages load
// it from: "cdn" (default, as the spec's embed page does) from a pinned external script host, or "local" from
// this service under /assets/ (offline machines). Both use the version installed here, and every file carries a
// Subresource Integrity hash computed from the installed package's bytes: the script host serves the npm
// tarball's files unchanged, so the same hash holds for both, and a host that serves anything else is refused
// by the browser.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export type AssetMode = 'cdn' | 'local';

/** The script host of "cdn" mode: it serves any file of any published npm version at a fixed URL. */
export const CDN_ORIGIN = 'https://cdn.jsdelivr.net';

/** A file a page may load: where it lives in node_modules and its Content-Type. */
interface AssetFile {
  pkg: 'maplibre-gl' | '@maplibre/maplibre-gl-inspect';
  /** Path inside the package. */
  file: string;
  type: string;
}

/**
 * Every file the pages load, by the name it has under /assets/{name}; nothing else of node_modules is reachable.
 * A Map, since the name comes from the URL: `__proto__` or `toString` must find nothing.
 */
const FILES = new Map<string, AssetFile>([
  ['maplibre-gl.mjs', { pkg: 'maplibre-gl', file: 'dist/maplibre-gl.mjs', type: 'text/javascript; charset=utf-8' }],
  ['maplibre-gl-worker.mjs', { pkg: 'maplibre-gl', file: 'dist/maplibre-gl-worker.mjs', type: 'text/javascript; charset=utf-8' }],
  ['maplibre-gl.css', { pkg: 'maplibre-gl', file: 'dist/maplibre-gl.css', type: 'text/css; charset=utf-8' }],
  ['maplibre-gl-inspect.mjs', { pkg: '@maplibre/maplibre-gl-inspect', file: 'dist/maplibre-gl-inspect.mjs', type: 'text/javascript; charset=utf-8' }],
  ['maplibre-gl-inspect.css', { pkg: '@maplibre/maplibre-gl-inspect', file: 'dist/maplibre-gl-inspect.css', type: 'text/css; charset=utf-8' }],
]);

export type AssetName = string;
export const ASSET_NAMES = [...FILES.keys()];

export interface LoadedAsset {
  bytes: Buffer;
  type: string;
  /** `sha384-…`, the Subresource Integrity value of the bytes. */
  integrity: string;
  /** The npm version of the package the file comes from. */
  version: string;
  /** The file's URL on the script host (the npm package at that exact version). */
  cdnUrl: string;
}

const require = createRequire(import.meta.url);
const loaded = new Map<string, LoadedAsset>();
const versions = new Map<string, string>();

function packageDir(pkg: string): { dir: string; version: string } {
  const manifest = require.resolve(`${pkg}/package.json`);
  let version = versions.get(pkg);
  if (version === undefined) {
    version = (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
    versions.set(pkg, version);
  }
  return { dir: path.dirname(manifest), version };
}

/** One asset, read and hashed once per process (the files of an installed package do not change under it). */
export function asset(name: string): LoadedAsset | undefined {
  const spec = FILES.get(name);
  if (!spec) return undefined;
  let a = loaded.get(name);
  if (!a) {
    const { dir, version } = packageDir(spec.pkg);
    const bytes = readFileSync(path.join(dir, spec.file));
    a = {
      bytes,
      type: spec.type,
      integrity: `sha384-${createHash('sha384').update(bytes).digest('base64')}`,
      version,
      cdnUrl: `${CDN_ORIGIN}/npm/${spec.pkg}@${version}/${spec.file}`,
    };
    loaded.set(name, a);
  }
  return a;
}

/** Path of the local copy: the version is in the path, so the files can be cached for good. */
export const localAssetPath = (name: string, version: string) => `/assets/${version}/${name}`;

/** Where a page loads one asset from, and its integrity value. */
export interface AssetRef {
  url: string;
  integrity: string;
}

/** The URL (on the script host, or under `base`, this service) and integrity of an asset. */
export function assetRef(name: AssetName, mode: AssetMode, base: string): AssetRef {
  const a = asset(name);
  if (!a) throw new Error(`unknown page asset ${name}`);
  return { url: mode === 'cdn' ? a.cdnUrl : `${base}${localAssetPath(name, a.version)}`, integrity: a.integrity };
}

/** The origins a page must be allowed to load the library from, for its Content-Security-Policy. */
export const libraryOrigins = (mode: AssetMode): string[] => (mode === 'cdn' ? [CDN_ORIGIN] : []);
