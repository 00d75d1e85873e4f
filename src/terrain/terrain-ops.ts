// The CPU-heavy terrain work as plain messages in and out, run in the terrain pool's threads (workers/terrain.ts,
// src/terrain/work.ts): decoding an archive's DEM tiles into a window, encoding elevations as terrain tiles,
// shading a hillshade tile and tracing a contour tile. Images are encoded with sharp (libvips), vector tiles with
// this server's MVT and MLT encoders.
import { LRUCache } from 'lru-cache';
import sharp from 'sharp';
import type { DemWindow } from './dem-window.js';
import { decodeDem, encodeDem, type DemEncoding } from './dem-encoding.js';
import { hillshadeImage, type HillshadeOptions } from './hillshade.js';
import { encodePng } from './png-writer.js';
import { contourLayer, type ContourOptions } from './contours.js';
import { assembleWindow, type MosaicPlan } from './mosaic.js';
import { encode, type CompressionLevels, type ContentEncoding } from '../tiles/encoding.js';
import { encodeMvt } from '../tiles/mvt-encode.js';
import { encodeMlt } from '../tiles/mlt-codec.js';

export type TerrainImageFormat = 'png' | 'webp';

/** An archive's encoded DEM tiles around a window, and where the window lies among them. */
export interface ArchiveTiles {
  plan: MosaicPlan;
  encoding: DemEncoding;
  tiles: { key: string; x: number; y: number; bytes: Uint8Array }[];
}

/**
 * What a product is made from: a window already read (a raster source's, warped by GDAL), or an archive's tiles to
 * assemble one from in the same thread, so that the window (a megabyte for a 512 px tile) never travels between
 * threads.
 */
export type WindowInput = { window: DemWindow } | { archive: ArchiveTiles };

export type TerrainTask =
  | ({ op: 'archive-window' } & ArchiveTiles)
  | { op: 'encode-dem'; window: DemWindow; encoding: DemEncoding; format: TerrainImageFormat; pngLevel: number }
  | { op: 'hillshade'; input: WindowInput; options: HillshadeOptions; format: TerrainImageFormat; pngLevel: number; webpQuality: number }
  | { op: 'contours'; window: DemWindow; options: ContourOptions; format: 'pbf' | 'mlt'; encoding: ContentEncoding; levels: CompressionLevels };

/** An empty answer (no bytes) means the window had no data at all. */
export type TerrainTaskResult<T extends TerrainTask> = T extends { op: 'archive-window' } ? DemWindow | undefined : Uint8Array;

/**
 * Decoded archive tiles, per thread: a window reads the tiles around its own, so each archive tile is asked for by
 * up to nine windows; decoding a 512 px PNG costs more than shading it. 48 tiles of 512 px are 48 MB.
 */
const decoded = new LRUCache<string, Float32Array>({ maxSize: 48 * 512 * 512, sizeCalculation: (a) => a.length });

async function decodeTile(bytes: Uint8Array, encoding: DemEncoding, size: number): Promise<Float32Array> {
  const { data, info } = await sharp(bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  if (info.width !== size || info.height !== size) throw new Error(`a DEM tile of ${info.width}x${info.height} px where ${size} px were expected`);
  return decodeDem(new Uint8Array(data.buffer, data.byteOffset, data.byteLength), encoding);
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

/** The window of an archive's tiles, their decoded elevations kept for the neighbouring windows. */
async function archiveWindow(a: ArchiveTiles): Promise<DemWindow | undefined> {
  const tiles = new Map<string, Float32Array>();
  for (const t of a.tiles) {
    let grid = decoded.get(t.key);
    if (!grid) {
      grid = await decodeTile(t.bytes, a.encoding, a.plan.sourceSize);
      decoded.set(t.key, grid);
    }
    tiles.set(`${t.x}/${t.y}`, grid);
  }
  return assembleWindow(a.plan, tiles);
}

export async function runTerrainTask<T extends TerrainTask>(task: T): Promise<TerrainTaskResult<T>> {
  switch (task.op) {
    case 'archive-window':
      return (await archiveWindow(task)) as TerrainTaskResult<T>;
    case 'encode-dem': {
      const rgba = encodeDem(inner(task.window), task.encoding);
      return (await encodeElevations(rgba, task.window.size, task.format, task.pngLevel)) as TerrainTaskResult<T>;
    }
    case 'hillshade': {
      const window = 'window' in task.input ? task.input.window : await archiveWindow(task.input.archive);
      if (!window) return new Uint8Array(0) as TerrainTaskResult<T>;
      const { pixels, channels } = hillshadeImage(window, task.options);
      if (task.format === 'png') return encodePng(pixels, window.size, window.size, channels, task.pngLevel) as TerrainTaskResult<T>;
      const webp = sharp(pixels, { raw: { width: window.size, height: window.size, channels } }).webp({ quality: task.webpQuality, alphaQuality: 100 });
      return new Uint8Array(await webp.toBuffer()) as TerrainTaskResult<T>;
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
