// Headless Debian Chromium for the page tests, launched as the other browser tests launch it, and small helpers
// to read what a page draws.
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { PNG } from 'pngjs';

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    // Debian's /usr/bin/chromium is a wrapper script; this is the browser binary. Playwright adds --headless.
    executablePath: '/usr/lib/chromium/chromium',
    args: [
      '--no-sandbox',
      // WebGL2 in software: SwiftShader through ANGLE (there is no GPU here).
      '--use-gl=angle',
      '--use-angle=swiftshader',
      '--enable-unsafe-swiftshader',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}

export type Rgb = [number, number, number];

export interface Shot {
  width: number;
  height: number;
  data: Buffer;
}

export async function screenshot(target: Page | Locator): Promise<Shot> {
  const png = PNG.sync.read(await target.screenshot());
  return { width: png.width, height: png.height, data: png.data };
}

export function pixelAt(img: Shot, x: number, y: number): Rgb {
  const i = (Math.round(y) * img.width + Math.round(x)) * 4;
  return [img.data[i], img.data[i + 1], img.data[i + 2]];
}

export const colourDistance = (a: Rgb, b: Rgb) => Math.max(Math.abs(a[0] - b[0]), Math.abs(a[1] - b[1]), Math.abs(a[2] - b[2]));

/** How many distinct colours (quantised to 4 bits a channel) a picture has: a blank page has one or two. */
export function colourCount(img: Shot): number {
  const seen = new Set<number>();
  for (let i = 0; i < img.data.length; i += 4) seen.add(((img.data[i] >> 4) << 8) | ((img.data[i + 1] >> 4) << 4) | (img.data[i + 2] >> 4));
  return seen.size;
}

/** Watches a page for what must never happen on it: page errors, dialogs, failed requests, HTTP errors, CSP violations. */
export function watch(page: Page, ignoreStatus: (url: string, status: number) => boolean = () => false): string[] {
  const problems: string[] = [];
  page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
  page.on('dialog', (d) => {
    problems.push(`dialog: ${d.type()} ${d.message()}`);
    void d.dismiss();
  });
  page.on('requestfailed', (r) => {
    // MapLibre cancels the tile requests of places it has flown past: a cancellation, not a failure.
    if (r.failure()?.errorText === 'net::ERR_ABORTED') return;
    problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
  });
  page.on('response', (r) => {
    if (r.status() >= 400 && !ignoreStatus(r.url(), r.status())) problems.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  page.on('console', (m) => {
    if (m.type() === 'error' || /Content Security Policy/i.test(m.text())) problems.push(`console ${m.type()}: ${m.text()}`);
  });
  return problems;
}

const LIB_DIR = path.dirname(createRequire(import.meta.url).resolve('maplibre-gl/dist/maplibre-gl.mjs'));
const LIB_FILES: Record<string, string> = {
  'maplibre-gl.mjs': 'text/javascript; charset=utf-8',
  'maplibre-gl-worker.mjs': 'text/javascript; charset=utf-8',
  'maplibre-gl.css': 'text/css; charset=utf-8',
};

/**
 * A test's own static server on 127.0.0.1: `page` at `/` and the maplibre-gl files of node_modules under `/lib/`
 * (never a CDN: the network is closed). For tests that drive maplibre-gl directly, outside the service's pages.
 */
export function startPageServer(page: string): Promise<http.Server> {
  const srv = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/') {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(page);
      return;
    }
    const name = url.pathname.replace(/^\/lib\//, '');
    const type = LIB_FILES[name];
    if (!url.pathname.startsWith('/lib/') || !type) {
      res.writeHead(404).end();
      return;
    }
    readFile(path.join(LIB_DIR, name)).then(
      (body) => res.writeHead(200, { 'Content-Type': type }).end(body),
      () => res.writeHead(500).end(),
    );
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(srv)));
}

/** The origin of openMapLibrePage's page: requests to it are answered by the test, none reach a socket. */
export const MAPLIBRE_ORIGIN = 'http://maplibre.test';
const MAPLIBRE_DIST = path.join(path.dirname(createRequire(import.meta.url).resolve('maplibre-gl/package.json')), 'dist');

/**
 * A page holding `html` (which imports './maplibre-gl.mjs' and sets `window.ready` once its map has loaded), with
 * maplibre-gl served from the npm package through request interception; anything else under the origin is a 404.
 */
export async function openMapLibrePage(html: string): Promise<{ browser: Browser; page: Page }> {
  const browser = await launchChromium();
  const page = await browser.newPage();
  await page.route(`${MAPLIBRE_ORIGIN}/**`, async (route) => {
    const name = new URL(route.request().url()).pathname.slice(1);
    if (name === 'index.html') return route.fulfill({ body: html, contentType: 'text/html' });
    if (name === 'maplibre-gl.mjs' || name === 'maplibre-gl-worker.mjs') return route.fulfill({ body: await readFile(path.join(MAPLIBRE_DIST, name)), contentType: 'text/javascript' });
    return route.fulfill({ status: 404, body: '' });
  });
  await page.goto(`${MAPLIBRE_ORIGIN}/index.html`);
  await page.waitForFunction('window.ready === true', undefined, { timeout: 60_000 });
  return { browser, page };
}
