// A stand-in for @maplibre/maplibre-gl-native (which cannot be installed here: its install downloads a binary),
// following the module's documented API: `new Map({ request, ratio })`, `map.load(style)`,
// `map.render({ zoom, width, height, center, bearing, pitch }, (err, buffer) => …)` answering raw premultiplied
// RGBA of (width*ratio) x (height*ratio), and `map.release()`. Like the real module it asks for the style's
// resources through `request(req, callback)`: each source's TileJSON, then a tile of each vector source, a
// glyph range, the sprite index, and a URL on another host; what it got is recorded for the test.
// The picture: every pixel is the style's background colour at half opacity, premultiplied.

interface Req {
  url: string;
  kind: number;
}
type Callback = (err?: Error | null, res?: { data: Uint8Array }) => void;

export interface Got {
  url: string;
  error: string | undefined;
  bytes: number;
  data: Uint8Array | undefined;
}

export const record = {
  maps: [] as StandInMap[],
  /** Zoom at which render never calls back (a hung render). */
  hangAtZoom: 21,
  /** Zoom at which render calls back with an error (a map that failed, as the module reports a render error). */
  failAtZoom: 20,
};

const ask = (request: (r: Req, cb: Callback) => void, url: string, kind: number) =>
  new Promise<Got>((resolve) => request({ url, kind }, (err, res) => resolve({ url, error: err?.message, bytes: res?.data?.byteLength ?? 0, data: res?.data })));

class StandInMap {
  readonly request: (r: Req, cb: Callback) => void;
  readonly ratio: number;
  style: Record<string, unknown> | undefined;
  loads = 0;
  released = false;
  renders: Record<string, unknown>[] = [];
  got: Got[] = [];

  constructor(options: { request: (r: Req, cb: Callback) => void; ratio: number }) {
    this.request = options.request;
    this.ratio = options.ratio;
    record.maps.push(this);
  }

  load(style: unknown): void {
    if (!style || typeof style !== 'object') throw new Error('load() takes a style object');
    this.style = style as Record<string, unknown>;
    this.loads++;
  }

  render(options: { zoom?: number; width?: number; height?: number; center?: [number, number]; bearing?: number; pitch?: number }, callback: (err: Error | null, buffer?: Uint8Array) => void): void {
    if (this.released) throw new Error('render after release');
    this.renders.push({ ...options });
    if (options.zoom === record.hangAtZoom) return;
    if (options.zoom === record.failAtZoom) return void setImmediate(() => callback(new Error('stand-in render error')));
    void this.fetchResources().then(() => {
      const w = Math.round((options.width ?? 512) * this.ratio);
      const h = Math.round((options.height ?? 512) * this.ratio);
      const bg = (this.style?.layers as { type: string; paint?: Record<string, string> }[]).find((l) => l.type === 'background')?.paint?.['background-color'] ?? '#000000';
      const rgb = /^rgb\((\d+),\s*(\d+),\s*(\d+)\)$/.exec(bg);
      const [r, g, b] = rgb ? [1, 2, 3].map((i) => Number(rgb[i])) : [1, 3, 5].map((i) => parseInt(bg.slice(i, i + 2), 16));
      const out = new Uint8Array(w * h * 4);
      for (let i = 0; i < out.length; i += 4) {
        out[i] = Math.round(r / 2);
        out[i + 1] = Math.round(g / 2);
        out[i + 2] = Math.round(b / 2);
        out[i + 3] = 128;
      }
      callback(null, out);
    });
  }

  private async fetchResources(): Promise<void> {
    if (this.got.length) return;
    const style = this.style!;
    for (const src of Object.values(style.sources as Record<string, { url?: string; type: string }>)) {
      if (!src.url) continue;
      const tj = await ask(this.request, src.url, 2);
      this.got.push(tj);
      if (!tj.data || src.type !== 'vector') continue;
      const tiles = (JSON.parse(Buffer.from(tj.data).toString()) as { tiles: string[] }).tiles;
      this.got.push(await ask(this.request, tiles[0].replace('{z}', '0').replace('{x}', '0').replace('{y}', '0'), 3));
    }
    if (typeof style.glyphs === 'string') {
      this.got.push(await ask(this.request, style.glyphs.replace('{fontstack}', encodeURIComponent('Noto Sans Regular')).replace('{range}', '0-255'), 4));
      this.got.push(await ask(this.request, style.glyphs.replace('{fontstack}', encodeURIComponent('No Such Font')).replace('{range}', '0-255'), 4));
    }
    if (typeof style.sprite === 'string') this.got.push(await ask(this.request, `${style.sprite}.json`, 6));
    this.got.push(await ask(this.request, 'https://elsewhere.example/tiles/0/0/0.png', 3));
  }

  release(): void {
    this.released = true;
  }
}

export { StandInMap as Map };
