// The pieces every server-rendered page shares: escaping, the JSON data block a page's script reads its options
// from, the import map that names the map library, and the Content-Security-Policy. No page has an inline
// script that runs: its code is a static module under /assets/pages/, its data a JSON block (never executed),
// and the one inline element the browser treats as script, the import map, carries the response's nonce.
import { randomBytes } from 'node:crypto';
import { assetRef, libraryOrigins, type AssetMode, type AssetName } from './library.js';

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text for an HTML text node or a quoted attribute value. */
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (ch) => HTML_ESCAPES[ch]);

/**
 * JSON that can stand inside a `<script type="application/json">` element: `<`, `>` and `&` are written as
 * \u escapes (so no `</script>` or `<!--` can end or bend the element), and so are U+2028/U+2029.
 */
export function jsonForScript(value: unknown): string {
  return JSON.stringify(value).replace(/[<>&\u2028\u2029]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** A fresh nonce for one response. */
export const newNonce = (): string => randomBytes(16).toString('base64');

/** A page's library: the URLs and integrity values of the files, and the policy origins they need. */
export interface PageLibrary {
  mode: AssetMode;
  /** Names of the JavaScript modules the page imports by bare specifier (besides maplibre-gl). */
  extraModules?: Partial<Record<string, AssetName>>;
  /** Style sheets of the library the page links. */
  css: AssetName[];
}

/**
 * `<link>`s and the import map: `maplibre-gl` (and any extra bare specifiers) map to the library's URL with its
 * integrity, the module is preloaded with the same integrity (browsers that do not read integrity from import
 * maps still check it), and the style sheets are linked with theirs.
 */
export function libraryHead(lib: PageLibrary, nonce: string, base: string): string {
  const modules: Record<string, AssetName> = { 'maplibre-gl': 'maplibre-gl.mjs', ...(lib.extraModules as Record<string, AssetName>) };
  const imports: Record<string, string> = {};
  const integrity: Record<string, string> = {};
  const links: string[] = [];
  const cross = ' crossorigin="anonymous"';
  for (const [specifier, name] of Object.entries(modules)) {
    const ref = assetRef(name, lib.mode, base);
    imports[specifier] = ref.url;
    integrity[ref.url] = ref.integrity;
    links.push(`<link rel="modulepreload" href="${escapeHtml(ref.url)}" integrity="${ref.integrity}"${cross}>`);
  }
  for (const name of lib.css) {
    const ref = assetRef(name, lib.mode, base);
    links.push(`<link rel="stylesheet" href="${escapeHtml(ref.url)}" integrity="${ref.integrity}"${cross}>`);
  }
  const map = jsonForScript({ imports, integrity });
  return `<script type="importmap" nonce="${nonce}">${map}</script>\n${links.join('\n')}`;
}

/** The worker file of the map library, for a page that loads it itself with integrity (client/map-library.js). */
export function workerRef(mode: AssetMode, base: string) {
  return assetRef('maplibre-gl-worker.mjs', mode, base);
}

/**
 * The policy of a page: scripts from this service, the script host (cdn mode) and the nonce'd import map only;
 * the map library's worker from a blob: URL it builds from the checked worker file; connections (styles,
 * TileJSON, tiles, glyphs, sprites) to this service, the script host and the origins `connect` names (those a
 * style refers to); images from this service and data:/blob: (sprites and markers); no plugins, no base
 * rewriting, no forms. `frame-ancestors` is left open: the embed page exists to be framed anywhere.
 */
export function contentSecurityPolicy(mode: AssetMode, nonce: string, connect: readonly string[] = [], self?: string): string {
  // The service's public origin counts as this page's own when public_url names another host than the request's.
  const lib = [...(self ? [self] : []), ...libraryOrigins(mode)];
  const join = (...parts: string[]) => [...new Set(parts)].join(' ');
  return [
    "default-src 'none'",
    `script-src ${join("'self'", `'nonce-${nonce}'`, ...lib)}`,
    `style-src ${join("'self'", ...lib)}`,
    `img-src 'self' data: blob:`,
    `connect-src ${join("'self'", ...lib, ...connect)}`,
    'worker-src blob:',
    "base-uri 'none'",
    "form-action 'none'",
    "object-src 'none'",
  ].join('; ');
}

/** http(s) origins of the URLs in a served style (sources, tiles, glyphs, sprite): what its page must reach. */
export function styleOrigins(style: unknown): string[] {
  const urls: string[] = [];
  const s = style as { sources?: Record<string, { url?: unknown; tiles?: unknown }>; glyphs?: unknown; sprite?: unknown };
  for (const src of Object.values(s.sources ?? {})) {
    if (typeof src?.url === 'string') urls.push(src.url);
    if (Array.isArray(src?.tiles)) urls.push(...src.tiles.filter((t): t is string => typeof t === 'string'));
  }
  if (typeof s.glyphs === 'string') urls.push(s.glyphs);
  if (typeof s.sprite === 'string') urls.push(s.sprite);
  if (Array.isArray(s.sprite)) urls.push(...s.sprite.map((e: { url?: unknown }) => e?.url).filter((u): u is string => typeof u === 'string'));
  const origins = new Set<string>();
  for (const u of urls) {
    try {
      const parsed = new URL(u.replace(/[{}]/g, '_'));
      // Only plain origins go into the policy: nothing a configured URL holds can add a directive.
      if (/^https?:\/\/[A-Za-z0-9.\-[\]:]+$/.test(parsed.origin)) origins.add(parsed.origin);
    } catch {
      // A relative or odd URL reaches nothing beyond 'self'.
    }
  }
  return [...origins];
}
