// The `native` backend: @maplibre/maplibre-gl-native, an optional dependency (its install downloads a
// prebuilt binary; `npm install @maplibre/maplibre-gl-native` where that host is reachable). It is loaded with
// a dynamic import, so the service runs without it. Its documented API:
//   new mbgl.Map({ request(req, callback), ratio })   req = { url, kind }; callback(err, { data }) or callback()
//   map.load(styleJson)
//   map.render({ zoom, width, height, center, bearing, pitch }, (err, buffer) => …)   raw premultiplied RGBA
//   map.release()
// A map is bound to one pixel ratio, so this renderer keeps one map per (style, ratio), each loaded once.
import { beforeDeadline, RenderError, unpremultiplyInPlace, type Frame, type RenderedFrame, type Renderer, type RendererEventSink, type ResourceFetcher, type StyleRef } from '../renderer.js';
import { emptyResource } from '../resources.js';

export const NATIVE_MODULE = '@maplibre/maplibre-gl-native';

export interface MbglRequest {
  url: string;
  kind: number;
}
export type MbglCallback = (err?: Error | null, res?: { data: Uint8Array }) => void;
export interface MbglRenderOptions {
  zoom: number;
  width: number;
  height: number;
  center: [number, number];
  bearing: number;
  pitch: number;
}
export interface MbglMap {
  load(style: unknown): void;
  render(options: MbglRenderOptions, callback: (err: Error | null | undefined, buffer: Uint8Array) => void): void;
  release(): void;
}
export interface MbglModule {
  Map: new (options: { request: (req: MbglRequest, callback: MbglCallback) => void; ratio: number }) => MbglMap;
}

/** Loads the native module, or explains why it is not there. */
export async function loadNativeModule(specifier = NATIVE_MODULE): Promise<MbglModule> {
  try {
    const mod = (await import(specifier)) as MbglModule & { default?: MbglModule };
    const m = typeof mod.Map === 'function' ? mod : mod.default;
    if (!m || typeof m.Map !== 'function') throw new Error('the module has no Map class');
    return m;
  } catch (err) {
    throw new RenderError('unavailable', `${specifier} is not usable: ${(err as Error).message.split('\n')[0]}`);
  }
}

/** URL prefix of resources inside native renders; never fetched over a network, only matched and stripped. */
const BASE = 'http://native.render.invalid/r';

interface MapSlot {
  map: MbglMap;
  key: string;
  busy: boolean;
  /** The fetcher of the render in progress (resources arrive only during renders). */
  fetcher: ResourceFetcher | undefined;
  /** A render of this map failed: it is out of the list and is released when that render returns. */
  failed?: boolean;
}

export class NativeRenderer implements Renderer {
  readonly backend = 'native' as const;
  readonly maxFrame: number;
  renders = 0;
  brokenReason: string | undefined;
  private readonly maps: MapSlot[] = [];

  private constructor(
    private readonly mbgl: MbglModule,
    maxFrame: number,
    private readonly maxMaps: number,
    private readonly onEvent: RendererEventSink,
  ) {
    this.maxFrame = maxFrame;
  }

  static async start(o: { maxFrame: number; module?: string; maxMaps?: number; onEvent?: RendererEventSink }): Promise<NativeRenderer> {
    return new NativeRenderer(await loadNativeModule(o.module), o.maxFrame, o.maxMaps ?? 4, o.onEvent ?? (() => {}));
  }

  async render(style: StyleRef, frame: Frame, fetch: ResourceFetcher, deadline: number, onFrame?: () => void): Promise<RenderedFrame> {
    if (this.brokenReason) throw new RenderError('crash', `renderer unusable: ${this.brokenReason}`);
    const t0 = performance.now();
    // MapLibre Native has no zoom below 0: a 256 px tile at z0 is drawn twice as large at zoom 0 and halved.
    const shrink = frame.zoom < 0 ? 2 ** Math.ceil(-frame.zoom) : 1;
    const slot = await this.mapFor(style, frame.ratio, fetch);
    const t1 = performance.now();
    onFrame?.();
    slot.busy = true;
    slot.fetcher = fetch;
    try {
      const width = frame.width * shrink;
      const height = frame.height * shrink;
      const options: MbglRenderOptions = { zoom: frame.zoom + Math.log2(shrink), width, height, center: frame.center, bearing: frame.bearing, pitch: frame.pitch };
      let raw: Uint8Array;
      try {
        raw = await beforeDeadline(
          new Promise<Uint8Array>((resolve, reject) => {
            try {
              slot.map.render(options, (err, buf) => (err ? reject(err) : resolve(buf)));
            } catch (err) {
              reject(err as Error);
            }
          }),
          deadline,
          () => (this.brokenReason ??= 'a render timed out'),
        );
      } catch (err) {
        if (err instanceof RenderError) throw err;
        // A map whose render failed is never handed another frame: it is released (once idle) and the next
        // render of its style loads a fresh one. This render is worth one more try ('crash').
        this.drop(slot, (err as Error).message);
        throw new RenderError('crash', `the native map failed: ${(err as Error).message}`);
      }
      const t2 = performance.now();
      const pw = Math.round(width * frame.ratio);
      const ph = Math.round(height * frame.ratio);
      if (raw.length !== pw * ph * 4) throw new RenderError('failed', `the native renderer returned ${raw.length} bytes, expected ${pw * ph * 4}`);
      // A copy the render thread owns (the module's buffer may be a view into shared memory); rows are already
      // top to bottom. Halving keeps an opaque image opaque.
      let data: Uint8Array = new Uint8Array(raw);
      const opaque = unpremultiplyInPlace(data);
      let w = pw;
      let h = ph;
      for (let s = shrink; s > 1; s /= 2) ({ data, width: w, height: h } = halve(data, w, h));
      this.renders++;
      return { data, width: w, height: h, opaque, timings: { style: t1 - t0, resources: 0, draw: t2 - t1, readback: 0, transfer: performance.now() - t2 } };
    } finally {
      slot.busy = false;
      slot.fetcher = undefined;
      if (slot.failed) slot.map.release();
    }
  }

  /** Takes a failed map out of service and reports it; it is released once its render has returned. */
  private drop(slot: MapSlot, reason: string): void {
    const i = this.maps.indexOf(slot);
    if (i >= 0) this.maps.splice(i, 1);
    slot.failed = true;
    this.onEvent({ kind: 'map-replaced', reason });
  }

  /** The map of this style and ratio, loaded once; the least recently used idle map beyond `maxMaps` is released. */
  private async mapFor(style: StyleRef, ratio: number, fetch: ResourceFetcher): Promise<MapSlot> {
    // MapLibre Native has no call to reload some tiles of a loaded map: a map is loaded anew after an expiry.
    const key = `${style.key}@${ratio}@${style.revision ?? 0}`;
    const i = this.maps.findIndex((m) => m.key === key && !m.busy);
    if (i >= 0) {
      const [slot] = this.maps.splice(i, 1);
      this.maps.push(slot);
      return slot;
    }
    const base = `${BASE}/${style.key}`;
    const styleRes = await fetch(`/styles/${encodeURIComponent(style.id)}/style.json${style.lang ? `?lang=${encodeURIComponent(style.lang)}` : ''}`, base);
    if (styleRes.status !== 200) throw new RenderError('style', `the style "${style.id}" could not be read (${styleRes.status})`);
    const json = JSON.parse(Buffer.from(styleRes.body).toString('utf8')) as unknown;
    const slot: MapSlot = { map: undefined as unknown as MbglMap, key, busy: false, fetcher: fetch };
    slot.map = new this.mbgl.Map({ ratio, request: (req, callback) => void answer(req.url, slot.fetcher, callback) });
    try {
      slot.map.load(json);
    } catch (err) {
      slot.map.release();
      throw new RenderError('style', `the style "${style.id}" did not load: ${(err as Error).message}`);
    }
    this.maps.push(slot);
    while (this.maps.length > this.maxMaps) {
      const idle = this.maps.findIndex((m) => !m.busy);
      if (idle < 0) break;
      this.maps.splice(idle, 1)[0].map.release();
    }
    return slot;
  }

  async close(): Promise<void> {
    this.brokenReason ??= 'closed';
    // A map in the middle of a render must not be released under it; its thread is ended by the pool instead.
    for (const m of this.maps.splice(0)) if (!m.busy) m.map.release();
  }
}

/** Answers a native resource request: our own URLs through the fetcher, missing ones empty, foreign ones refused. */
async function answer(url: string, fetcher: ResourceFetcher | undefined, callback: MbglCallback): Promise<void> {
  const m = url.startsWith(BASE) ? /^\/[^/]+(\/.*)$/.exec(url.slice(BASE.length)) : null;
  if (!m || !fetcher) {
    const empty = emptyResource(new URL(url, BASE).pathname, 404);
    return empty.status === 200 ? callback(null, { data: empty.body }) : callback(new Error(`not available to the renderer: ${url}`));
  }
  const base = url.slice(0, BASE.length + url.slice(BASE.length).indexOf(m[1]));
  let res = await fetcher(m[1], base).catch(() => undefined);
  if (!res || res.status !== 200) res = emptyResource(m[1].split('?')[0], res?.status ?? 503);
  if (res.status !== 200) return callback(new Error(`${m[1]} answered ${res.status}`));
  callback(null, { data: Buffer.from(res.body.buffer, res.body.byteOffset, res.body.byteLength) });
}

/** Halves an RGBA image by averaging 2x2 blocks (used for zooms below 0). */
export function halve(src: Uint8Array, width: number, height: number): { data: Uint8Array; width: number; height: number } {
  const w = Math.floor(width / 2);
  const h = Math.floor(height / 2);
  const out = new Uint8Array(w * h * 4);
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const a = (2 * y * width + 2 * x) * 4;
      const b = a + width * 4;
      const o = (y * w + x) * 4;
      for (let c = 0; c < 4; c++) out[o + c] = (src[a + c] + src[a + 4 + c] + src[b + c] + src[b + 4 + c] + 2) >> 2;
    }
  }
  return { data: out, width: w, height: h };
}
