// The CPU-heavy terrain work as plain messages in and out, run in the terrain pool's threads (workers/terrain.ts,
// src/terrain/work.ts): decoding an archive's DEM tiles into a window, encoding elevations as terrain tiles,
// shading a hillshade tile and tracing a contour tile. Images are encoded with sharp (libvips), vector tiles with
// this server's MVT and MLT encoders.
import sharp from 'sharp';
import type { DemWindow } from './dem-window.js';
import { decodeDem, encodeDem, type DemEncoding } from './dem-encoding.js';
import { hillshadeImage, type HillshadeOptions } from './hillshade.js';
import { encodePng } from './png-writer.js';
import { contourLayer, type ContourOptions } from './contours.js';
import { assembleWindow, WindowScratch, type MosaicPlan } from './mosaic.js';
import { sampleGrid, type GridSamples } from '../grid/bilinear.js';
import { encode, type CompressionLevels, type ContentEncoding } from '../tiles/encoding.js';
import { encodeMvt } from '../tiles/mvt-encode.js';
import { encodeMlt } from '../tiles/mlt-codec.js';

export type TerrainImageFormat = 'png' | 'webp';

/**
 * An archive's DEM tiles around a window, and where the window lies among them: each either as the archive holds it
 * (`bytes`, to decode) or already decoded (`grid`, metres in memory shared between threads).
 */
export interface ArchiveTiles {
  plan: MosaicPlan;
  encoding: DemEncoding;
  tiles: { key: string; x: number; y: number; bytes?: Uint8Array; grid?: Float32Array }[];
}

/** Tiles a task decoded, in shared memory: the HTTP thread keeps them for the next windows, in whichever thread those run. */
export type DecodedTiles = { key: string; grid: Float32Array }[];

/** A product made from an archive's tiles, and the tiles decoded on the way. */
export interface WithDecoded<T> {
  value: T;
  decoded: DecodedTiles;
}

/**
 * What a product is made from: a window already read (a raster source's, warped by GDAL), an archive's tiles to
 * assemble one from, or a file's pixels and where the window samples them (a web-mercator COG read directly), so
 * that the window (a megabyte for a 512 px tile) is made in the thread that uses it.
 */
export type WindowInput = { window: DemWindow } | { archive: ArchiveTiles } | { samples: GridSamples; at: Omit<DemWindow, 'data'> };

export type TerrainTask =
  | ({ op: 'archive-window' } & ArchiveTiles)
  | { op: 'encode-dem'; window: DemWindow; encoding: DemEncoding; format: TerrainImageFormat; pngLevel: number }
  | { op: 'hillshade'; input: WindowInput; options: HillshadeOptions; format: TerrainImageFormat; pngLevel: number; webpQuality: number }
  | { op: 'contours'; window: DemWindow; options: ContourOptions; format: 'pbf' | 'mlt'; encoding: ContentEncoding; levels: CompressionLevels };

/** An empty hillshade (no bytes) means the window had no data at all. */
export type TerrainTaskResult<T extends TerrainTask> = T extends { op: 'archive-window' }
  ? WithDecoded<DemWindow | undefined>
  : T extends { op: 'hillshade' }
    ? WithDecoded<Uint8Array>
    : Uint8Array;

/** A DEM tile decoded to metres, in a SharedArrayBuffer so that passing it to another thread copies nothing. */
async function decodeTile(bytes: Uint8Array, encoding: DemEncoding, size: number): Promise<Float32Array> {
  const { data, info } = await sharp(bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  if (info.width !== size || info.height !== size) throw new Error(`a DEM tile of ${info.width}x${info.height} px where ${size} px were expected`);
  const metres = decodeDem(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), encoding);
  const shared = new Float32Array(new SharedArrayBuffer(metres.byteLength));
  shared.set(metres);
  return shared;
}

/** Elevations as an image: lossless always (a lossy WebP would move every elevation). */
async function encodeElevations(rgba: Uint8Array, size: number, format: TerrainImageFormat, pngLevel: number): Promise<Uint8Array> {
  const image = sharp(rgba, { raw: { width: size, height: size, channels: 4 } });
  const out = format === 'png' ? image.png({ compressionLevel: pngLevel }) : image.webp({ lossless: true, exact: true });
  return new Uint8Array(await out.toBuffer());
}

/** The inner size×size of a window (its border dropped). */
function inner(win: DemWindow): Float32Array {
  if (win.border === 0) return win.data;
  const side = win.size + 2 * win.border;
  const out = new Float32Array(win.size * win.size);
  for (let r = 0; r < win.size; r++) out.set(win.data.subarray((r + win.border) * side + win.border, (r + win.border) * side + win.border + win.size), r * win.size);
  return out;
}

/** The thread's buffers for windows it shades and forgets (hillshade tiles). */
const scratch = new WindowScratch();

/**
 * The window of an archive's tiles (those not yet decoded decoded here, and listed in `decoded`); in the thread's
 * scratch buffers when `reuse` (the window must then be consumed before the next one is made).
 */
async function archiveWindow(a: ArchiveTiles, decoded: DecodedTiles, reuse = false): Promise<DemWindow | undefined> {
  const tiles = new Map<string, Float32Array>();
  for (const t of a.tiles) {
    let grid = t.grid;
    if (!grid) {
      if (!t.bytes) continue;
      grid = await decodeTile(t.bytes, a.encoding, a.plan.sourceSize);
      decoded.push({ key: t.key, grid });
    }
    tiles.set(`${t.x}/${t.y}`, grid);
  }
  return assembleWindow(a.plan, tiles, reuse ? scratch : undefined);
}

/** The window a file's pixels give, in the thread's scratch buffer (consumed before the next window); undefined when no sample has data. */
function sampledWindow(samples: GridSamples, at: Omit<DemWindow, 'data'>): DemWindow | undefined {
  const side = at.size + 2 * at.border;
  const { data, any } = sampleGrid(samples, { into: scratch.window(side * side) });
  return any ? { ...at, data } : undefined;
}

export async function runTerrainTask<T extends TerrainTask>(task: T): Promise<TerrainTaskResult<T>> {
  switch (task.op) {
    case 'archive-window': {
      const decoded: DecodedTiles = [];
      return { value: await archiveWindow(task, decoded), decoded } as TerrainTaskResult<T>;
    }
    case 'encode-dem': {
      const rgba = encodeDem(inner(task.window), task.encoding);
      return (await encodeElevations(rgba, task.window.size, task.format, task.pngLevel)) as TerrainTaskResult<T>;
    }
    case 'hillshade': {
      const decoded: DecodedTiles = [];
      const done = (value: Uint8Array) => ({ value, decoded }) as TerrainTaskResult<T>;
      const input = task.input;
      const window = 'window' in input ? input.window : 'archive' in input ? await archiveWindow(input.archive, decoded, true) : sampledWindow(input.samples, input.at);
      if (!window) return done(new Uint8Array(0));
      const { pixels, channels } = hillshadeImage(window, task.options);
      if (task.format === 'png') return done(encodePng(pixels, window.size, window.size, channels, task.pngLevel));
      const webp = sharp(pixels, { raw: { width: window.size, height: window.size, channels } }).webp({ quality: task.webpQuality, alphaQuality: 100 });
      return done(new Uint8Array(await webp.toBuffer()));
    }
    case 'contours': {
      const layer = contourLayer(task.window, task.options);
      // No line in the tile: no bytes, and the tile answers 204 like any vector tile without data.
      if (layer.features.length === 0) return new Uint8Array(0) as TerrainTaskResult<T>;
      const raw = task.format === 'mlt' ? encodeMlt([layer]) : encodeMvt([layer]);
      return encode(raw, task.encoding, task.levels) as TerrainTaskResult<T>;
    }
  }
}
