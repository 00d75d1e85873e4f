// The `chromium` backend: maplibre-gl in headless Chromium (software WebGL2 through SwiftShader), driven by
// playwright-core. One renderer is one browser with a few pages; every page holds one MapLibre map that keeps
// its style (and its parsed tiles) between frames.
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { chromium, type Browser, type Page } from 'playwright-core';
import { killMarked, MARKER_SWITCH } from '../processes.js';
import { beforeDeadline, RenderError, unpremultiplyInPlace, type Frame, type RenderedFrame, type Renderer, type ResourceFetcher, type StyleRef } from '../renderer.js';
import { FLAT_QUERY, LocalServer } from './local-server.js';

/** Where Chromium or Chrome usually is; Debian's /usr/bin/chromium is a wrapper script around the first. */
const CANDIDATES = ['/usr/lib/chromium/chromium', '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/opt/google/chrome/chrome'];

/** The browser executable: the configured one, CHROMIUM_PATH, or the first usual location that exists. */
export function findChromium(configured?: string): string | undefined {
  if (configured) return existsSync(configured) ? configured : undefined;
  const env = process.env.CHROMIUM_PATH;
  if (env) return existsSync(env) ? env : undefined;
  return CANDIDATES.find((p) => existsSync(p));
}

export interface ChromiumOptions {
  executablePath: string;
  /** Pages (concurrent frames) of this browser. */
  pages: number;
  /** Marker on the browser's command line (processes.ts), so a supervisor can find and end it. */
  marker: string;
  /** Largest frame edge in pixels; larger frames are split by the caller. */
  maxFrame?: number;
  /** Draw fill-extrusion layers flat in pitch-0 frames (flat-extrusions.ts). */
  flatExtrusions?: boolean;
  launchTimeoutMs?: number;
}

const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-extensions',
  '--disable-default-apps',
  '--mute-audio',
  '--hide-scrollbars',
  // Software WebGL2: ANGLE on SwiftShader (there is no GPU on a render host, and none is needed).
  '--use-gl=angle',
  '--use-angle=swiftshader',
  '--enable-unsafe-swiftshader',
  '--ignore-gpu-blocklist',
  // Pages are never in front: keep their timers and frames at full speed.
  '--disable-background-timer-throttling',
  '--disable-renderer-backgrounding',
  '--disable-backgrounding-occluded-windows',
  // Any host other than the renderer's own server fails at once, so a style pointing elsewhere never stalls a render.
  '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
];

interface Slot {
  page: Page;
  busy: boolean;
  /** The style key the page's map has loaded. */
  styleKey: string | undefined;
}

const TIMED_OUT = 'a render timed out';

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Loading a style (once per page and style) has its own time budget; `render.timeout_ms` bounds frames. */
const STYLE_LOAD_MS = 60_000;

export class ChromiumRenderer implements Renderer {
  readonly backend = 'chromium' as const;
  readonly maxFrame: number;
  renders = 0;
  private broken: string | undefined;
  private readonly active = new Set<ResourceFetcher>();

  private constructor(
    private readonly browser: Browser,
    private readonly server: LocalServer,
    private readonly slots: Slot[],
    maxFrame: number,
    private readonly flatExtrusions: boolean,
    private readonly marker: string,
  ) {
    this.maxFrame = maxFrame;
    browser.on('disconnected', () => (this.broken ??= 'the browser exited'));
    for (const s of slots) s.page.on('crash', () => (this.broken ??= 'a page crashed'));
  }

  static async start(o: ChromiumOptions): Promise<ChromiumRenderer> {
    const maxFrame = o.maxFrame ?? 4096;
    const server = new LocalServer({ workers: 1, maxCanvas: maxFrame });
    await server.listen();
    let browser: Browser | undefined;
    try {
      browser = await chromium.launch({
        executablePath: o.executablePath,
        args: [...FLAGS, `${MARKER_SWITCH}${o.marker}`],
        timeout: o.launchTimeoutMs ?? 60_000,
        // The render pool owns shutdown; signal handlers in a worker thread would not fire anyway.
        handleSIGINT: false,
        handleSIGTERM: false,
        handleSIGHUP: false,
      });
      const slots: Slot[] = [];
      for (let i = 0; i < o.pages; i++) {
        const page = await browser.newPage({ viewport: { width: 512, height: 512 }, deviceScaleFactor: 1 });
        await page.goto(server.pageUrl());
        await page.waitForFunction('window.__tstsReady === true', undefined, { timeout: 30_000 });
        slots.push({ page, busy: false, styleKey: undefined });
      }
      return new ChromiumRenderer(browser, server, slots, maxFrame, o.flatExtrusions ?? true, o.marker);
    } catch (err) {
      await browser?.close().catch(() => {});
      await server.close();
      throw new RenderError('unavailable', `Chromium did not start (${o.executablePath}): ${(err as Error).message.split('\n')[0]}`);
    }
  }

  /** Why this renderer can no longer be used, or undefined while it can. */
  get brokenReason(): string | undefined {
    return this.broken;
  }

  async render(style: StyleRef, frame: Frame, fetch: ResourceFetcher, deadline: number): Promise<RenderedFrame> {
    if (this.broken) throw new RenderError('crash', `renderer unusable: ${this.broken}`);
    const slot = this.slots.find((s) => !s.busy);
    if (!slot) throw new RenderError('failed', 'no free page (more concurrent renders than pages)');
    slot.busy = true;
    this.active.add(fetch);
    this.server.fetcher = fetch;
    const id = randomBytes(8).toString('hex');
    const pixelWidth = Math.round(frame.width * frame.ratio);
    const pixelHeight = Math.round(frame.height * frame.ratio);
    const upload = this.server.expectFrame(id, pixelWidth, pixelHeight);
    const base = this.server.resourceBase(style.key);
    const flat = this.flatExtrusions && frame.pitch === 0;
    const job = {
      styleKey: flat ? `${style.key}:flat` : style.key,
      styleUrl: `${base}/styles/${encodeURIComponent(style.id)}/style.json${flat ? FLAT_QUERY : ''}`,
      upload: upload.url,
      width: frame.width,
      height: frame.height,
      ratio: frame.ratio,
      zoom: frame.zoom,
      center: frame.center,
      bearing: frame.bearing,
      pitch: frame.pitch,
    };
    try {
      let styleMs = 0;
      if (slot.styleKey !== job.styleKey) {
        const t = performance.now();
        slot.styleKey = undefined;
        const load = slot.page.evaluate(`window.__tsts.load(${JSON.stringify(job.styleUrl)}, ${JSON.stringify(job.styleKey)})`);
        await beforeDeadline(load, Math.max(deadline, Date.now() + STYLE_LOAD_MS));
        slot.styleKey = job.styleKey;
        styleMs = performance.now() - t;
        // The frame's own time limit starts now.
        deadline += styleMs;
      }
      // A string expression: a bundled function could carry helpers that do not exist in the page.
      const done = slot.page.evaluate(`window.__tsts.render(${JSON.stringify(job)})`) as Promise<PageResult>;
      const result = await beforeDeadline(done, deadline);
      if (result.width !== pixelWidth || result.height !== pixelHeight) {
        throw new RenderError('failed', `the canvas is ${result.width}x${result.height}, expected ${pixelWidth}x${pixelHeight}`);
      }
      // Rows arrive flipped into place (local-server.ts); alpha is still premultiplied.
      const data = await beforeDeadline(upload.bytes, deadline);
      this.renders++;
      const t = performance.now();
      const opaque = unpremultiplyInPlace(data);
      return {
        data,
        width: result.width,
        height: result.height,
        opaque,
        timings: { style: styleMs, resources: result.resources, draw: result.draw, readback: result.readback, transfer: result.transfer + (performance.now() - t) },
      };
    } catch (err) {
      this.server.cancelFrame(id, err as Error);
      if (err instanceof RenderError) {
        if (err.reason === 'timeout') this.broken ??= TIMED_OUT;
        throw err;
      }
      const message = (err as Error).message.split('\n')[0];
      if (this.broken || /Target (page, context or browser )?(has been )?closed|crash/i.test(message)) {
        this.broken ??= message;
        throw new RenderError('crash', `the browser went away during the render: ${message}`);
      }
      throw new RenderError(/style/i.test(message) ? 'style' : 'failed', message);
    } finally {
      slot.busy = false;
      this.active.delete(fetch);
      // Late requests of a finished render are answered through another running render, or empty.
      this.server.fetcher = this.active.values().next().value;
    }
  }

  async close(): Promise<void> {
    const timedOut = this.broken === TIMED_OUT;
    this.broken ??= 'closed';
    // A browser that timed out is still drawing the frame that was too big or too slow, and would answer a
    // polite close only when done: it is killed. Any other gets 5 s to close. Whatever the close said, no process
    // of this browser outlives it (a no-op when the close worked).
    if (!timedOut) await Promise.race([this.browser.close().catch(() => {}), delay(5_000)]);
    await killMarked(this.marker, true);
    await this.server.close();
  }
}

interface PageResult {
  width: number;
  height: number;
  resources: number;
  draw: number;
  readback: number;
  transfer: number;
  lastError: string;
}
