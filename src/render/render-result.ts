// What a render request gives the HTTP layer (an image and where it came from) and what it tells the render
// service about its caller; the public path of a rendered tile, which a forwarded request asks the owner for.
import type { LanguageTag } from '../config/language-tag.js';
import type { CachedImage } from '../shared-cache/render-cache.js';
import { encodingQuery, extOf, type ImageEncoding } from './image-encoding.js';
import type { TileRequest } from './tile-render.js';
import type { RenderPriority } from './priority-queue.js';

export { extOf };

/** What a render makes besides its view: the image's encoding, and the language of its labels (none: as written). */
export interface RenderOutput {
  encoding: ImageEncoding;
  lang?: LanguageTag;
}

/**
 * The public path of a rendered tile (what a forwarded request asks the owner process for): the format, quality
 * and language this process resolved, spelled out, so the owner draws the same image whatever headers it sees.
 */
export function tilePath(styleId: string, t: TileRequest, out: RenderOutput): string {
  const size = t.base === 256 ? '256/' : '';
  const scale = t.scale > 1 ? `@${t.scale}x` : '';
  const query = [...encodingQuery(out.encoding), ...(out.lang ? [`lang=${out.lang.tag}`] : [])];
  return `/styles/${encodeURIComponent(styleId)}/${size}${t.z}/${t.x}/${t.y}${scale}.${extOf(out.encoding.format)}${query.length ? `?${query.join('&')}` : ''}`;
}

/** An image and how it was obtained; `timing` (milliseconds per phase) when this request rendered it. */
export interface RenderResult {
  image: CachedImage;
  /** `peer`: drawn (or found cached) by the process that owns the tile's block (peers.ts); `shared`: from the fleet's cache. */
  from: 'memory' | 'disk' | 'shared' | 'render' | 'peer';
  timing: Record<string, number> | undefined;
  /** For `peer`: the owner's own Server-Timing header. */
  peerTiming?: string;
  /** The image was made before an expiry that touches it: answered while a re-render replaces it (expired-tiles.ts). */
  stale?: boolean;
}

/** Where a render's answer goes: the request's own cancel signal, for dropping work no one waits for. */
export interface RenderCaller {
  signal?: AbortSignal;
  /** Forwarded by another process of the cluster as this tile's owner: drawn here, never forwarded again. */
  fromPeer?: boolean;
  /** Who asked (the client's address): the render queue gives clients turns (fair-queue.ts). */
  client?: string;
  /** The render queue's class (priority-queue.ts); default interactive. */
  priority?: RenderPriority;
}
