// The renderer interface: what every backend (MapLibre Native, MapLibre GL in headless Chromium) does.
// A renderer draws one frame of a style for a camera and hands back its pixels; everything around it
// (tile geometry, overlays, encoding, caching, queueing, timeouts) is shared and lives outside the backends.

/** The camera and size of one frame. Sizes are CSS pixels; the frame has width*ratio x height*ratio pixels. */
export interface Frame {
  width: number;
  height: number;
  /** Device pixel ratio (the @2x / @3x scale). */
  ratio: number;
  /** MapLibre zoom: the world is 512 px wide at zoom 0 (may be below 0 for 256 px tiles at z0). */
  zoom: number;
  /** [longitude, latitude] of the frame's centre. */
  center: [number, number];
  bearing: number;
  pitch: number;
  /**
   * Tiles to cut out of the frame and encode where it was drawn (the Chromium page encodes them with the browser's
   * own codecs, so only encoded bytes leave it). A backend that cannot hands back the frame's pixels instead, and the
   * service cuts and encodes them.
   */
  encode?: FrameEncoding;
}

/** Encoded tiles asked of a frame: rectangles in device pixels (top-left origin) and one format for all. */
export interface FrameEncoding {
  format: 'png' | 'jpeg' | 'webp';
  /** JPEG and WebP quality, 0..1. */
  quality: number;
  /**
   * The style paints every pixel opaque (an opaque background layer at this zoom): PNG and WebP are written without
   * an alpha channel. Otherwise they keep it (straight alpha). JPEG is always flattened onto white.
   */
  opaque: boolean;
  /**
   * PNG only: the zlib level (0-9) the page deflates at. Interactive tiles and seeded ones may differ (a tile
   * someone waits for against one written once into an archive); undefined: the browser's own CompressionStream.
   */
  level?: number;
  tiles: { left: number; top: number; width: number; height: number }[];
}

/** Which style to draw, and how the renderer reaches it. */
export interface StyleRef {
  id: string;
  /**
   * Identity of the style as served: changes whenever the style file or the configuration changes. A renderer
   * keeps a loaded style while the key stays the same (no reload, no re-layout).
   */
  key: string;
  /** The language of its labels (BCP 47), asked of the style route as `?lang=`; absent: the style as written. */
  lang?: string;
  /**
   * The time (ms) of the last expiry of a source the style draws; absent: none. A renderer that holds source tiles
   * of an older revision drops or reloads those an expiry reached before it draws (expired-source-tiles.ts), or,
   * when it cannot tell them apart, loads the style anew.
   */
  revision?: number;
}

/** Where a frame's time went, in milliseconds (reported by the bench and in debug logs). */
export interface FrameTimings {
  /** Loading the style when it changed (0 when it was already loaded). */
  style: number;
  /** Waiting for tiles, glyphs and sprites, including their parsing and layout. */
  resources: number;
  /** The one draw of the frame. */
  draw: number;
  /** Reading the pixels back. */
  readback: number;
  /** Moving the pixels (or the encoded tiles) to the render thread. */
  transfer: number;
  /** Encoding the tiles inside the renderer, when the frame asked for encoded tiles. */
  encode?: number;
  /** Waiting for a free renderer (filled in by the pool). */
  queue?: number;
}

/**
 * Pixels of a rendered frame: RGBA, not premultiplied, rows top to bottom; or, when the frame asked for encoded tiles
 * and the backend made them, those tiles (in the order asked) and no pixels (`data` empty).
 */
export interface RenderedFrame {
  data: Uint8Array;
  tiles?: Uint8Array[];
  /** Pixel dimensions (the frame's size times its ratio). */
  width: number;
  height: number;
  /** True when every pixel is known to be opaque (the encoder then needs no scan of its own); else unknown. */
  opaque?: boolean;
  timings: FrameTimings;
}

/** A resource answer from the front: the body of a 200, or nothing (missing resources render empty). */
export interface Resource {
  status: number;
  contentType: string | undefined;
  body: Uint8Array;
}

/**
 * How a renderer gets a tile, glyph range, sprite, TileJSON or style: a path on this service (`/data/…`,
 * `/fonts/…`, `/styles/…`), answered in-process by the front with the same code as the HTTP routes.
 * `base` is the URL prefix the answer's own URLs must carry so that they come back to this renderer.
 */
export type ResourceFetcher = (path: string, base: string) => Promise<Resource>;

export type BackendName = 'native' | 'chromium';

export interface Renderer {
  readonly backend: BackendName;
  /**
   * Draws one frame. Rejects with RenderError; a renderer whose error says `broken` must be closed. `onFrame` is
   * called when the frame's own time limit starts: after a style load or a page replacement, which are not
   * counted against it.
   */
  render(style: StyleRef, frame: Frame, fetch: ResourceFetcher, deadline: number, onFrame?: () => void): Promise<RenderedFrame>;
  /** Frames larger than this (pixels per edge) must be split by the caller. */
  readonly maxFrame: number;
  /** Renders done since start; the pool recycles a renderer after `max_renders`. */
  readonly renders: number;
  /** Why this renderer can no longer render (its browser exited, a render timed out), or undefined. */
  readonly brokenReason: string | undefined;
  close(): Promise<void>;
}

/**
 * Something that happened to a renderer, reported up to the pool's owner to be logged and counted:
 * - `page-replaced`: a Chromium page (its map) failed and was replaced; the browser lives on.
 * - `map-replaced`: a native map failed a render and was released; the next render of its style loads a new one.
 * - `renderer-replaced`: a whole renderer (browser, or native renderer) broke and is replaced.
 * - `renderer-recycled`: a renderer reached `max_renders` and is replaced (routine).
 * - `renderer-start-failed`: a renderer could not start; the thread waits `backoffMs` before the next try.
 * - `encoder-fallback`: a Chromium page could not load its PNG deflate and writes PNGs the costlier way (still correct).
 */
export interface RendererEvent {
  kind: 'page-replaced' | 'map-replaced' | 'renderer-replaced' | 'renderer-recycled' | 'renderer-start-failed' | 'encoder-fallback';
  reason: string;
  /** Consecutive failures of this thread's renderers (a crash loop), for `renderer-start-failed` and `renderer-replaced`. */
  failures?: number;
  backoffMs?: number;
}

export type RendererEventSink = (e: RendererEvent) => void;

export type RenderErrorReason = 'timeout' | 'overload' | 'crash' | 'style' | 'unavailable' | 'failed' | 'cancelled' | 'queue_timeout';

/** A failed render; `reason` labels render_errors_total and picks the HTTP status. */
export class RenderError extends Error {
  constructor(
    readonly reason: RenderErrorReason,
    message: string,
  ) {
    super(message);
    this.name = 'RenderError';
  }
}

/** Structured-clone-safe form of a RenderError (errors crossing a thread boundary lose their class). */
export function renderErrorFrom(err: unknown): RenderError {
  if (err instanceof RenderError) return err;
  const e = err as { reason?: unknown; message?: unknown } | undefined;
  const reasons: RenderErrorReason[] = ['timeout', 'overload', 'crash', 'style', 'unavailable', 'failed', 'cancelled', 'queue_timeout'];
  const reason = reasons.includes(e?.reason as RenderErrorReason) ? (e!.reason as RenderErrorReason) : 'failed';
  return new RenderError(reason, typeof e?.message === 'string' ? e.message : String(err));
}

/**
 * Premultiplied RGBA to straight alpha, in place. Maps are mostly opaque: the scan reads whole pixels as
 * 32-bit words and only the translucent ones are divided. Returns whether every pixel was opaque.
 */
export function unpremultiplyInPlace(px: Uint8Array): boolean {
  const n = px.length >> 2;
  let opaque = true;
  if (px.byteOffset % 4 === 0) {
    const words = new Uint32Array(px.buffer, px.byteOffset, n);
    // Alpha is the high byte of a little-endian word: an opaque pixel is a word of at least 0xff000000.
    for (let p = 0; p < n; p++) {
      if (words[p] < 0xff000000) {
        unpremultiplyPixel(px, p * 4);
        opaque = false;
      }
    }
  } else {
    for (let i = 0; i < px.length; i += 4) {
      if (px[i + 3] !== 255) {
        unpremultiplyPixel(px, i);
        opaque = false;
      }
    }
  }
  return opaque;
}

function unpremultiplyPixel(px: Uint8Array, i: number): void {
  const a = px[i + 3];
  if (a === 0) return;
  // c * 255 / a rounded half up, in integers: a float reciprocal rounds some halves (116 * 255 / 232) down.
  const half = a >> 1;
  px[i] = Math.min(255, ((px[i] * 255 + half) / a) | 0);
  px[i + 1] = Math.min(255, ((px[i + 1] * 255 + half) / a) | 0);
  px[i + 2] = Math.min(255, ((px[i + 2] * 255 + half) / a) | 0);
}

/** `p`, or a timeout RenderError at `deadline` (epoch ms), whichever comes first; `onTimeout` runs first. */
export function beforeDeadline<T>(p: Promise<T>, deadline: number, onTimeout?: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout?.();
      reject(new RenderError('timeout', 'the render ran past its time limit'));
    }, Math.max(0, deadline - Date.now()));
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
