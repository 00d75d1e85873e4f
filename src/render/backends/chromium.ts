// The `chromium` backend: maplibre-gl in headless Chromium (software WebGL2 through SwiftShader), driven by
// playwright-core. One renderer is one browser with a few pages; every page holds one MapLibre map that keeps
// its style (and its parsed tiles) between frames.
import { existsSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { killMarked, MARKER_SWITCH } from '../processes.js';
import { beforeDeadline, RenderError, unpremultiplyInPlace, type Frame, type RenderedFrame, type Renderer, type RendererEventSink, type ResourceFetcher, type StyleRef } from '../renderer.js';
import { GL_FRAME_LIMIT, glLaunch, type GlStack } from './gl-stack.js';
import { LocalServer, styleQuery } from './local-server.js';

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
  /** The software GL stack under WebGL (gl-stack.ts); swiftshader when not given. */
  gl?: GlStack;
  launchTimeoutMs?: number;
  /** Told when a page is replaced. */
  onEvent?: RendererEventSink;
}

/** Switches of every renderer browser (the GL stack's come from gl-stack.ts); the floor bench launches with the same. */
export const CHROMIUM_FLAGS = [
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
  // The GL stack's own switches (software WebGL2: there is no GPU on a render host) come from gl-stack.ts.
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
  /** Why this page must be replaced before its next frame (it crashed, lost its WebGL context, or threw). */
  broken: string | undefined;
}

const TIMED_OUT = 'a render timed out';
/** The page script's message when the map's WebGL context is gone (chromium-page.ts). */
const CONTEXT_LOST = 'webgl context lost';

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Loading a style (once per page and style) has its own time budget; `render.timeout_ms` bounds frames. */
const STYLE_LOAD_MS = 60_000;
/** Opening a page and passing its canary frame. */
const PAGE_OPEN_MS = 30_000;

/**
 * A new page with the render script loaded and its WebGL canary frame passed on the GL stack asked for (WebGL's
 * renderer string must match it: Chromium falls back to SwiftShader on its own when a driver fails); rejects
 * saying why not.
 */
async function openPage(browser: Browser, server: LocalServer, renderer: RegExp, onEvent: RendererEventSink): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 512, height: 512 }, deviceScaleFactor: 1 });
  try {
    await page.goto(server.pageUrl(), { timeout: PAGE_OPEN_MS });
    await page.waitForFunction('window.__tstsReady !== undefined', undefined, { timeout: PAGE_OPEN_MS });
    const canary = (await page.evaluate('window.__tstsReady')) as { ok: boolean; detail: string; renderer: string; deflate: string; problem: string };
    if (!canary.ok) throw new Error(`the page's WebGL canary frame failed: ${canary.detail}`);
    if (!renderer.test(canary.renderer)) throw new Error(`WebGL runs on ${canary.renderer || 'an unknown renderer'}, not the GL stack asked for`);
    // The page still writes correct PNGs without its deflate module (CompressionStream), only at a higher CPU cost.
    if (canary.deflate !== 'libdeflate') onEvent({ kind: 'encoder-fallback', reason: `the page's PNG deflate did not load (${canary.problem || 'unknown'}): PNG tiles are deflated by CompressionStream` });
    return page;
  } catch (err) {
    await page.close().catch(() => {});
    throw err;
  }
}

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
    private readonly onEvent: RendererEventSink,
    private readonly rendererPattern: RegExp,
  ) {
    this.maxFrame = maxFrame;
    browser.on('disconnected', () => (this.broken ??= 'the browser exited'));
    for (const s of slots) this.watch(s);
  }

  static async start(o: ChromiumOptions): Promise<ChromiumRenderer> {
    const maxFrame = o.maxFrame ?? 4096;
    const gl = o.gl ?? 'swiftshader';
    const launch = glLaunch(gl);
    // The canvas may reach the stacks' limit: bulk frames (seeding, re-renders) are larger than `maxFrame`.
    const server = new LocalServer({ workers: 1, maxCanvas: Math.max(maxFrame, GL_FRAME_LIMIT) });
    await server.listen();
    let browser: Browser | undefined;
    try {
      // Loaded here, in the render thread that launches a browser: at the top it would cost every process half a
      // second of start-up (the HTTP processes bundle this module but never launch a browser).
      const { chromium } = await import('playwright-core');
      browser = await chromium.launch({
        executablePath: o.executablePath,
        args: [...CHROMIUM_FLAGS, ...launch.args, `${MARKER_SWITCH}${o.marker}`],
        env: { ...process.env, ...launch.env },
        timeout: o.launchTimeoutMs ?? 60_000,
        // The render pool owns shutdown; signal handlers in a worker thread would not fire anyway.
        handleSIGINT: false,
        handleSIGTERM: false,
        handleSIGHUP: false,
      });
      const slots: Slot[] = [];
      for (let i = 0; i < o.pages; i++) slots.push({ page: await openPage(browser, server, launch.renderer, o.onEvent ?? (() => {})), busy: false, styleKey: undefined, broken: undefined });
      return new ChromiumRenderer(browser, server, slots, maxFrame, o.flatExtrusions ?? true, o.marker, o.onEvent ?? (() => {}), launch.renderer);
    } catch (err) {
      await browser?.close().catch(() => {});
      await killMarked(o.marker, true);
      await server.close();
      throw new RenderError('unavailable', `Chromium did not start on GL stack ${gl} (${o.executablePath}): ${(err as Error).message.split('\n')[0]}`);
    }
  }

  /** Why this renderer can no longer be used, or undefined while it can. */
  get brokenReason(): string | undefined {
    return this.broken;
  }

  /** A page whose renderer process dies is replaced before its next frame; the browser lives on. */
  private watch(slot: Slot): void {
    const page = slot.page;
    page.on('crash', () => {
      if (slot.page === page) slot.broken ??= 'the page process crashed';
    });
  }

  /** Replaces a broken page by a new one that passed its canary; when that fails the whole browser is broken. */
  private async replacePage(slot: Slot): Promise<void> {
    const reason = slot.broken ?? 'replaced';
    const old = slot.page;
    void Promise.race([old.close().catch(() => {}), delay(5_000)]);
    try {
      slot.page = await openPage(this.browser, this.server, this.rendererPattern, this.onEvent);
    } catch (err) {
      this.broken ??= `a failed page could not be replaced (${reason}): ${(err as Error).message.split('\n')[0]}`;
      throw new RenderError('crash', `renderer unusable: ${this.broken}`);
    }
    slot.broken = undefined;
    slot.styleKey = undefined;
    this.watch(slot);
    this.onEvent({ kind: 'page-replaced', reason });
  }

  async render(style: StyleRef, frame: Frame, fetch: ResourceFetcher, deadline: number, onFrame?: () => void): Promise<RenderedFrame> {
    if (this.broken) throw new RenderError('crash', `renderer unusable: ${this.broken}`);
    const slot = this.slots.find((s) => !s.busy);
    if (!slot) throw new RenderError('failed', 'no free page (more concurrent renders than pages)');
    slot.busy = true;
    this.active.add(fetch);
    this.server.fetcher = fetch;
    try {
      // A page found broken before the frame began (a crash or a lost context since its last frame) is replaced
      // and the frame drawn on the new page: nothing was drawn yet, so nothing is lost. Once only.
      for (let attempt = 0; ; attempt++) {
        if (slot.broken) {
          const t = performance.now();
          await this.replacePage(slot);
          // Opening a page is not the frame's time, as loading a style is not.
          deadline += performance.now() - t;
        }
        const out = await this.draw(slot, style, frame, deadline, onFrame);
        if (out !== 'lost') return out;
        slot.broken = CONTEXT_LOST;
        if (attempt > 0) throw new RenderError('crash', 'the WebGL context of a new page was lost at once');
      }
    } finally {
      slot.busy = false;
      this.active.delete(fetch);
      // Late requests of a finished render are answered through another running render, or empty.
      this.server.fetcher = this.active.values().next().value;
    }
  }

  /** One frame on one page: the pixels, or 'lost' when the page's WebGL context was gone before it began. */
  private async draw(slot: Slot, style: StyleRef, frame: Frame, deadline: number, onFrame: (() => void) | undefined): Promise<RenderedFrame | 'lost'> {
    const id = randomBytes(8).toString('hex');
    const pixelWidth = Math.round(frame.width * frame.ratio);
    const pixelHeight = Math.round(frame.height * frame.ratio);
    const encode = frame.encode;
    const upload = encode ? this.server.expectTiles(id, pixelWidth, pixelHeight, encode.tiles.length) : this.server.expectFrame(id, pixelWidth, pixelHeight);
    const base = this.server.resourceBase(style.key);
    const flat = this.flatExtrusions && frame.pitch === 0;
    const job = {
      styleKey: flat ? `${style.key}:flat` : style.key,
      styleUrl: `${base}/styles/${encodeURIComponent(style.id)}/style.json${styleQuery(style, flat)}`,
      styleId: style.id,
      revision: style.revision ?? 0,
      expiredTiles: this.server.expiredTilesUrl,
      upload: upload.url,
      encode,
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
        const load = slot.page.evaluate(`window.__tsts.load(${JSON.stringify(job.styleUrl)}, ${JSON.stringify(job.styleKey)}, ${job.revision})`);
        await beforeDeadline(load, Math.max(deadline, Date.now() + STYLE_LOAD_MS));
        slot.styleKey = job.styleKey;
        styleMs = performance.now() - t;
        // The frame's own time limit starts now.
        deadline += styleMs;
      }
      onFrame?.();
      // A string expression: a bundled function could carry helpers that do not exist in the page.
      const done = slot.page.evaluate(`window.__tsts.render(${JSON.stringify(job)})`) as Promise<PageResult>;
      const result = await beforeDeadline(done, deadline);
      if (result.lost) {
        this.server.cancelFrame(id, new Error(CONTEXT_LOST));
        return 'lost';
      }
      if (result.width !== pixelWidth || result.height !== pixelHeight) {
        throw new RenderError('failed', `the canvas is ${result.width}x${result.height}, expected ${pixelWidth}x${pixelHeight}`);
      }
      if ('tiles' in upload) {
        const tiles = await beforeDeadline(upload.tiles, deadline);
        this.renders++;
        return {
          data: new Uint8Array(0),
          tiles,
          width: result.width,
          height: result.height,
          timings: { style: styleMs, resources: result.resources, draw: result.draw, readback: result.readback, transfer: result.transfer, encode: result.encode ?? 0 },
        };
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
      throw this.failure(slot, err);
    }
  }

  /**
   * What a failed frame means for this renderer. A timeout breaks the browser (it is still drawing); the browser
   * gone breaks it too; a style that does not load is the style's fault; anything else that went wrong in the
   * page (its process crashed, its context was lost, the map threw) breaks that page only, and the render is
   * worth one more try on a healthy one ('crash').
   */
  private failure(slot: Slot, err: unknown): RenderError {
    if (err instanceof RenderError) {
      if (err.reason === 'timeout') this.broken ??= TIMED_OUT;
      else if (err.reason !== 'style') slot.broken ??= err.message;
      return err;
    }
    const message = (err as Error).message.split('\n')[0];
    if (this.broken || !this.browser.isConnected()) {
      this.broken ??= message;
      return new RenderError('crash', `the browser went away during the render: ${message}`);
    }
    if (/style request answered|style .* is not loaded/i.test(message)) return new RenderError('style', message);
    slot.broken ??= message.includes(CONTEXT_LOST) ? CONTEXT_LOST : message;
    return new RenderError('crash', `the page failed during the render: ${message}`);
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
  /** The page's WebGL context was lost before the frame began (nothing drawn). */
  lost?: boolean;
  width: number;
  height: number;
  resources: number;
  draw: number;
  readback: number;
  transfer: number;
  /** Encoding the tiles in the page (frames that asked for encoded tiles). */
  encode?: number;
  lastError: string;
}
