// Helpers of the rendering tests: an OpenMapTiles archive holding the planet tiles (z0-1) and the real z14
// Paris tile, server configs with the OSM Liberty showcase style, image decoding and pixel reading, and the
// browsers a server started.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import assert from 'node:assert/strict';
import pixelmatch from 'pixelmatch';
import { PNG } from 'pngjs';
import sharp from 'sharp';
import { openSource } from '../../src/sources/open.js';
import { fixture, ROOT } from './server.js';
import { tempDir, writeMbtiles, type MbtilesTile } from './foundation.js';

/** The z14 tile of central Paris, XYZ (the fixture's name carries the TMS row 10748). */
export const PARIS = { z: 14, x: 8298, y: 5635 };
export const WATER: Rgb = [158, 189, 255];

export type Rgb = [number, number, number];

/** MBTiles with every tile of the planet archive (z0-1, gzip MVT) plus the Paris z14 tile. */
export async function buildOmtArchive(dir: string): Promise<string> {
  const planet = await openSource({ id: 'planet', type: 'pmtiles', path: fixture('vector/omt-planet-z0-1.pmtiles') });
  const tiles: MbtilesTile[] = [];
  try {
    for (const [z, x, y] of [[0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 0, 1], [1, 1, 1]]) {
      const data = await planet.getTile(z, x, y);
      if (data) tiles.push({ z, x, y, data });
    }
  } finally {
    await planet.close();
  }
  tiles.push({ ...PARIS, data: gzipSync(readFileSync(fixture('vector/omt-tiles/14_8298_10748.mvt'))) });
  const metadata = { name: 'OpenMapTiles test', format: 'pbf', minzoom: '0', maxzoom: '14', bounds: '-180,-85.0511,180,85.0511' };
  return writeMbtiles(path.join(dir, 'omt.mbtiles'), metadata, tiles);
}

/** A config serving OSM Liberty over `archive`, with `render` lines added to its [render] section. */
export function renderToml(archive: string, cacheDir: string, render: string, server = ''): string {
  return `fonts = "${fixture('fonts')}"
[server]
${server}
[[sources]]
id = "openmaptiles"
type = "mbtiles"
path = "${archive}"
[[sources]]
id = "natural_earth"
type = "pmtiles"
path = "${fixture('raster/natural-earth-png-z0-1.pmtiles')}"
[[styles]]
id = "osm-liberty"
path = "${fixture('styles/osm-liberty/style.json')}"
name = "OSM Liberty"
[cache]
dir = "${cacheDir}"
[render]
${render}
`;
}

export interface Decoded {
  width: number;
  height: number;
  data: Buffer;
}

/** Any image (png, jpeg, webp) as RGBA pixels. */
export async function decode(bytes: Uint8Array): Promise<Decoded> {
  const { data, info } = await sharp(bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { width: info.width, height: info.height, data };
}

export function pixel(img: Decoded, x: number, y: number): Rgb {
  const i = (Math.floor(y) * img.width + Math.floor(x)) * 4;
  return [img.data[i], img.data[i + 1], img.data[i + 2]];
}

export const distance = (a: Rgb, b: Rgb) => Math.max(Math.abs(a[0] - b[0]), Math.abs(a[1] - b[1]), Math.abs(a[2] - b[2]));

/** Share (0..1) of the image's pixels that satisfy `test`. */
export function share(img: Decoded, test: (c: Rgb) => boolean): number {
  let n = 0;
  for (let i = 0; i < img.data.length; i += 4) if (test([img.data[i], img.data[i + 1], img.data[i + 2]])) n++;
  return n / (img.width * img.height);
}

/** The most frequent colour of an image. */
export function dominantColor(img: Decoded): Rgb {
  const counts = new Map<number, number>();
  for (let i = 0; i < img.data.length; i += 4) {
    const k = (img.data[i] << 16) | (img.data[i + 1] << 8) | img.data[i + 2];
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  const [k] = [...counts.entries()].reduce((a, b) => (b[1] > a[1] ? b : a));
  return [(k >> 16) & 255, (k >> 8) & 255, k & 255];
}

export function distinctColors(img: Decoded): number {
  const seen = new Set<number>();
  for (let i = 0; i < img.data.length; i += 4) seen.add((img.data[i] << 16) | (img.data[i + 1] << 8) | img.data[i + 2]);
  return seen.size;
}

/** Pixel position of a longitude/latitude in a 512 px tile z/x/y (Web Mercator). */
export function tilePixel(z: number, x: number, y: number, lon: number, lat: number, size = 512): [number, number] {
  const n = 2 ** z;
  const r = (lat * Math.PI) / 180;
  const gx = ((lon + 180) / 360) * n;
  const gy = ((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n;
  return [(gx - x) * size, (gy - y) * size];
}

/** A process below a server: its id and command line. */
export interface ChildProc {
  pid: number;
  args: string;
}

/** Every process below `serverPid` (any depth), with its command line. */
function descendants(serverPid: number): ChildProc[] {
  const out = execFileSync('ps', ['-eo', 'pid=,ppid=,args='], { encoding: 'utf8', maxBuffer: 16 << 20 });
  const rows = out
    .trim()
    .split('\n')
    .map((l) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ pid: Number(m[1]), ppid: Number(m[2]), args: m[3] }));
  const parent = new Map(rows.map((r) => [r.pid, r.ppid]));
  const below = (pid: number) => {
    for (let p = parent.get(pid), i = 0; p && i < 32; p = parent.get(p), i++) if (p === serverPid) return true;
    return false;
  };
  return rows.filter((r) => below(r.pid)).map(({ pid, args }) => ({ pid, args }));
}

/** Every Chromium process below `serverPid` (browsers and their GPU, page and utility processes). */
export function chromiumProcesses(serverPid: number): ChildProc[] {
  return descendants(serverPid).filter((p) => /chrom/.test(p.args.split(' ')[0]));
}

/** Process ids of the browsers (main processes) a server started: descendants carrying the renderer marker. */
export function browserPids(serverPid: number): number[] {
  return descendants(serverPid)
    .filter((p) => p.args.includes('--tileserver-ts-renderer=') && !p.args.includes('--type='))
    .map((p) => p.pid);
}

/** Every process below `serverPid` whose command is Chromium (browsers and their helpers). */
export function chromiumDescendants(serverPid: number): number[] {
  return chromiumProcesses(serverPid).map((p) => p.pid);
}

export const renderTempDir = () => tempDir('tsts-render-');

export interface Fetched {
  status: number;
  headers: Headers;
  body: Buffer;
}

/** GET `url` with fetch, the body read whole. */
export async function fetchBytes(url: string, headers: Record<string, string> = {}): Promise<Fetched> {
  const res = await fetch(url, { headers });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

/** GET a rendered image: it must be a 200 of `type`; returns it decoded. */
export async function fetchImage(url: string, type = 'image/png'): Promise<Decoded> {
  const r = await fetchBytes(url);
  assert.equal(r.status, 200, `${url}: ${r.body.toString().slice(0, 300)}`);
  assert.equal(r.headers.get('content-type'), type);
  return decode(r.body);
}

/** Golden images of the rendering tests; `make goldens` (UPDATE_GOLDENS=1) rewrites them from this machine's renders. */
export const GOLDENS = path.join(ROOT, 'test/goldens/render');

/**
 * The render tests' tolerance: two renders of the same tile agree when at most 0.5% of their pixels differ beyond
 * pixelmatch's 0.1 threshold (antialiasing and label placement near frame edges differ a little between frames).
 */
export function assertRendersAgree(name: string, expected: { data: Uint8Array; width: number; height: number }, img: Decoded): void {
  assert.deepEqual([img.width, img.height], [expected.width, expected.height], `${name}: size`);
  const diff = pixelmatch(expected.data, img.data, undefined, img.width, img.height, { threshold: 0.1 });
  assert.ok(diff <= img.width * img.height * 0.005, `${name}: ${diff} pixels differ`);
}

/** Compares a render with its golden image within the render tests' tolerance (assertRendersAgree). */
export async function golden(name: string, bytes: Uint8Array | Decoded): Promise<void> {
  const file = path.join(GOLDENS, `${name}.png`);
  const img = bytes instanceof Uint8Array ? await decode(bytes) : bytes;
  const png = new PNG({ width: img.width, height: img.height });
  img.data.copy(png.data);
  if (process.env.UPDATE_GOLDENS === '1' || !existsSync(file)) {
    assert.ok(process.env.UPDATE_GOLDENS === '1', `missing golden ${file}: run make goldens`);
    mkdirSync(GOLDENS, { recursive: true });
    writeFileSync(file, PNG.sync.write(png));
    return;
  }
  assertRendersAgree(`${name} against its golden image`, PNG.sync.read(readFileSync(file)), img);
}
