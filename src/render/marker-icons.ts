// The images of icon markers (tileserver-gl's `marker=lon,lat|icon|…`), fetched before a static map is drawn so
// that a missing or refused icon is the client's 400 naming `marker`, never a half-drawn map. Three places:
//   sprite:{name}   the style's own sprite, at the request's scale (@2x, @3x when the style has them)
//   {path}          a file of the `files` directory, read through this server's own /files route (same checks)
//   http(s)://…     a host listed in render.marker_hosts, and no other: the host is checked before any
//                   connection, redirects are not followed (they could lead elsewhere), the body is cut off past
//                   render.marker_max_bytes and the wait past render.marker_timeout_ms.
// Images are decoded by sharp (PNG, JPEG, WebP, GIF, SVG) and kept as PNG, cached per process (files for a minute,
// icons of marker hosts for ten; a finished static map is cached with the rest of the render cache).
import { LRUCache } from 'lru-cache';
import sharp from 'sharp';
import type { AppState } from '../state/app-state.js';
import type { LoadedStyle } from '../styles/loaded-style.js';
import type { AppFetch } from './resources.js';
import type { Problem } from './static-params.js';
import type { IconImage, Overlays } from './svg.js';
import { iconKey, type IconSource } from './tileserver-gl-grammar.js';

/** Origin of in-process requests (as resources.ts's): never a network. */
const INTERNAL_ORIGIN = 'http://render.internal';
/** Largest decoded icon, pixels: an icon is small, and a small file can decode to a huge image. */
const MAX_ICON_PIXELS = 1024 * 1024;
/** Icons and sprite sheets kept per process. */
const CACHE_BYTES = 32 * 1024 * 1024;
/** How long an icon from a marker host is trusted before it is fetched again. */
const REMOTE_TTL_MS = 10 * 60 * 1000;
/** A file of the files directory may be replaced without a reload: it is read again after this. */
const FILE_TTL_MS = 60 * 1000;

class IconProblem extends Error {}

interface SpriteSheet {
  index: Record<string, { x: number; y: number; width: number; height: number; pixelRatio?: number }>;
  png: Buffer;
}

type Cached = IconImage | SpriteSheet;
const sizeOf = (v: Cached) => ('png' in v && !('index' in v) ? v.png.length : (v as SpriteSheet).png.length + 1024);

export class MarkerIcons {
  private readonly cache = new LRUCache<string, Cached>({ maxSize: CACHE_BYTES, sizeCalculation: (v) => Math.max(1, sizeOf(v)) });

  constructor(private readonly app: () => AppFetch | undefined) {}

  /**
   * The overlays with the images of their icon markers, or the problem with the first icon that cannot be had.
   * `ratio` is the request's scale (sprite icons come from the sheet of that scale when the style has one).
   */
  async resolve(state: AppState, style: LoadedStyle, overlays: Overlays, ratio: number, signal?: AbortSignal): Promise<{ ok: true; value: Overlays } | { ok: false; problem: Problem }> {
    if (overlays.icons.length === 0) return { ok: true, value: overlays };
    const images = new Map<string, IconImage>();
    const unique = new Map(overlays.icons.map((m) => [iconKey(m.icon), m.icon]));
    try {
      await Promise.all(
        [...unique].map(async ([key, source]) => {
          images.set(key, await this.image(state, style, source, ratio, signal));
        }),
      );
    } catch (err) {
      if (err instanceof IconProblem) return { ok: false, problem: { parameter: 'marker', detail: err.message } };
      throw err;
    }
    return { ok: true, value: { ...overlays, iconImages: images } };
  }

  private async image(state: AppState, style: LoadedStyle, source: IconSource, ratio: number, signal?: AbortSignal): Promise<IconImage> {
    if (source.type === 'sprite') return this.spriteIcon(style, source.name, ratio);
    if (source.type === 'url') return this.remoteIcon(state, source.url, signal);
    return this.fileIcon(state, source.path);
  }

  private async spriteIcon(style: LoadedStyle, name: string, ratio: number): Promise<IconImage> {
    const key = `sprite:${style.id}:${style.hash}:${ratio}:${name}`;
    const hit = this.cache.get(key);
    if (hit) return hit as IconImage;
    const sheet = await this.spriteSheet(style, ratio);
    const entry = sheet && Object.hasOwn(sheet.index, name) ? sheet.index[name] : undefined;
    if (!sheet || !entry) throw new IconProblem(`the style "${style.id}" has no sprite icon "${name}"`);
    const png = await sharp(sheet.png).extract({ left: entry.x, top: entry.y, width: entry.width, height: entry.height }).png().toBuffer();
    const pr = entry.pixelRatio ?? 1;
    const icon: IconImage = { png, width: entry.width / pr, height: entry.height / pr };
    this.cache.set(key, icon);
    return icon;
  }

  /** The style's sprite sheet at `ratio`, else at a lower ratio, else undefined (the style has no sprite). */
  private async spriteSheet(style: LoadedStyle, ratio: number): Promise<SpriteSheet | undefined> {
    for (let r = Math.round(ratio); r >= 1; r--) {
      const key = `sheet:${style.id}:${style.hash}:${r}`;
      const hit = this.cache.get(key);
      if (hit) return hit as SpriteSheet;
      const suffix = r === 1 ? '' : `@${r}x`;
      const base = `/styles/${encodeURIComponent(style.id)}/sprite${suffix}`;
      const [json, png] = await Promise.all([this.internal(`${base}.json`), this.internal(`${base}.png`)]);
      if (json.status !== 200 || png.status !== 200) continue;
      let index: SpriteSheet['index'];
      try {
        index = JSON.parse(json.body.toString('utf8')) as SpriteSheet['index'];
      } catch {
        continue;
      }
      const sheet: SpriteSheet = { index, png: png.body };
      this.cache.set(key, sheet);
      return sheet;
    }
    return undefined;
  }

  private async fileIcon(state: AppState, file: string): Promise<IconImage> {
    if (!state.config.files) throw new IconProblem(`icon "${file}": no files directory is configured (files)`);
    const key = `file:${state.configHash}:${file}`;
    const hit = this.cache.get(key);
    if (hit) return hit as IconImage;
    const res = await this.internal(`/files/${file.split('/').map(encodeURIComponent).join('/')}`);
    if (res.status !== 200) throw new IconProblem(`icon "${file}" is not a file of the files directory`);
    if (res.body.length > state.config.render.marker_max_bytes) throw new IconProblem(`icon "${file}" is ${res.body.length} bytes, more than render.marker_max_bytes (${state.config.render.marker_max_bytes})`);
    const icon = await decodeIcon(res.body, `icon "${file}"`);
    this.cache.set(key, icon, { ttl: FILE_TTL_MS });
    return icon;
  }

  private async remoteIcon(state: AppState, url: URL, signal?: AbortSignal): Promise<IconImage> {
    const { marker_hosts: hosts, marker_max_bytes: maxBytes, marker_timeout_ms: timeoutMs } = state.config.render;
    if (!hostAllowed(url, hosts)) {
      throw new IconProblem(`icon host "${url.host}" is not in render.marker_hosts${hosts.length ? ` (${hosts.join(', ')})` : ' (empty: no host is allowed)'}`);
    }
    const key = `url:${url.href}`;
    const hit = this.cache.get(key);
    if (hit) return hit as IconImage;
    const timeout = AbortSignal.timeout(timeoutMs);
    const cancel = signal ? AbortSignal.any([signal, timeout]) : timeout;
    let body: Buffer;
    try {
      const res = await fetch(url, { redirect: 'manual', signal: cancel });
      if (res.status !== 200) {
        await res.body?.cancel();
        throw new IconProblem(`icon URL ${url.href} answered ${res.status}${res.status >= 300 && res.status < 400 ? ' (redirects are not followed)' : ''}`);
      }
      body = await readBounded(res, maxBytes, url);
    } catch (err) {
      if (err instanceof IconProblem) throw err;
      if (timeout.aborted) throw new IconProblem(`icon URL ${url.href} did not answer within render.marker_timeout_ms (${timeoutMs} ms)`);
      if (signal?.aborted) throw err;
      throw new IconProblem(`icon URL ${url.href} could not be fetched`);
    }
    const icon = await decodeIcon(body, `icon URL ${url.href}`);
    this.cache.set(key, icon, { ttl: REMOTE_TTL_MS });
    return icon;
  }

  private async internal(path: string): Promise<{ status: number; body: Buffer }> {
    const app = this.app();
    if (!app) return { status: 503, body: Buffer.alloc(0) };
    const res = await app(new Request(INTERNAL_ORIGIN + path), { renderBase: INTERNAL_ORIGIN });
    return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
  }
}

/** True when the URL's host (and port, when the entry names one) is one of the allowed entries. */
export function hostAllowed(url: URL, hosts: readonly string[]): boolean {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  const name = url.hostname.toLowerCase();
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return hosts.some((entry) => {
    const m = /^(.*?)(?::(\d+))?$/.exec(entry.toLowerCase())!;
    return m[1] === name && (m[2] === undefined || m[2] === port);
  });
}

/** The body, cut off with a problem as soon as it passes `max` bytes (a Content-Length over it is refused at once). */
async function readBounded(res: Response, max: number, url: URL): Promise<Buffer> {
  const tooLarge = () => new IconProblem(`icon URL ${url.href} is larger than render.marker_max_bytes (${max})`);
  const declared = Number(res.headers.get('content-length') ?? NaN);
  if (declared > max) {
    await res.body?.cancel();
    throw tooLarge();
  }
  const chunks: Buffer[] = [];
  let total = 0;
  if (!res.body) return Buffer.alloc(0);
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.length;
    if (total > max) {
      await reader.cancel();
      throw tooLarge();
    }
    chunks.push(Buffer.from(value));
  }
  return Buffer.concat(chunks);
}

async function decodeIcon(bytes: Buffer, what: string): Promise<IconImage> {
  try {
    const { data, info } = await sharp(bytes, { limitInputPixels: MAX_ICON_PIXELS }).png().toBuffer({ resolveWithObject: true });
    return { png: data, width: info.width, height: info.height };
  } catch {
    throw new IconProblem(`${what} is not an image (PNG, JPEG, WebP, GIF or SVG) of at most ${MAX_ICON_PIXELS} pixels`);
  }
}
