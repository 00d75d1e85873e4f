// Geometry of rendered raster tiles: which frame draws a tile (a metatile of m x m tiles with a buffer around
// it, drawn once and cut), and how a frame larger than the renderer's limit is split into parts.
import { offsetCenter, unmercator, type Camera } from './camera.js';
import type { Frame } from './renderer.js';

export interface TileRequest {
  z: number;
  x: number;
  y: number;
  /** Tile edge before scale: 512 (default) or 256. */
  base: 256 | 512;
  scale: number;
}

export interface MetatilePlan {
  frame: Frame;
  /** The block's first tile and its edge in tiles (a block planned by planBlock may be wider than tall: cols, rows). */
  x0: number;
  y0: number;
  size: number;
  cols?: number;
  rows?: number;
  /** Pixel offset of tile (x0, y0) in the frame (the buffer), and the pixel edge of one tile. */
  offset: number;
  tilePixels: number;
}

/**
 * The frame that draws the metatile containing a tile. The block is `metatile` tiles on an edge (fewer at low
 * zoom, and fewer when the frame would exceed `maxFrame` pixels), aligned to multiples of its size. A 256 px
 * tile shows the area of the 512 px tile of the same z/x/y, so it is drawn at MapLibre zoom z-1.
 */
export function planMetatile(t: TileRequest, metatile: number, buffer: number, maxFrame: number): MetatilePlan {
  let size = Math.min(metatile, 2 ** t.z);
  while (size > 1 && (size * t.base + 2 * buffer) * t.scale > maxFrame) size /= 2;
  const buf = (t.base + 2 * buffer) * t.scale > maxFrame ? 0 : buffer;
  const x0 = Math.floor(t.x / size) * size;
  const y0 = Math.floor(t.y / size) * size;
  const n = 2 ** t.z;
  const center = unmercator((x0 + size / 2) / n, (y0 + size / 2) / n);
  const edge = size * t.base + 2 * buf;
  return {
    frame: { width: edge, height: edge, ratio: t.scale, zoom: t.z + Math.log2(t.base / 512), center, bearing: 0, pitch: 0 },
    x0,
    y0,
    size,
    offset: buf * t.scale,
    tilePixels: t.base * t.scale,
  };
}

/**
 * Adaptive metatiles (render.metatile = "auto"): the tiles asked for at once are drawn together. Tiles are grouped
 * by `batchEdge` x `batchEdge` block; within a block the frame covers the bounding box of the tiles asked for by
 * the time a renderer is free (a lone tile's 2x2 metatile, up to the whole block for a view; tile-batches.ts).
 * The block edge is the largest of `largest` (4 for a person's tiles; render.bulk_metatile for bulk work), halved
 * as often as needed (1 at z0), whose frame fits `maxFrame` at the tile's scale.
 */
export function batchEdge(t: TileRequest, buffer: number, maxFrame: number, largest = 4): number {
  let edge = Math.min(largest, 2 ** t.z);
  while (edge > 1 && (edge * t.base + 2 * buffer) * t.scale > maxFrame) edge /= 2;
  return edge;
}

/** The frame drawing tiles x0..x0+cols-1, y0..y0+rows-1 of zoom t.z with `buffer` px around them. */
export function planBlock(t: TileRequest, x0: number, y0: number, cols: number, rows: number, buffer: number, maxFrame: number): MetatilePlan {
  const buf = (Math.max(cols, rows) * t.base + 2 * buffer) * t.scale > maxFrame ? 0 : buffer;
  const n = 2 ** t.z;
  const center = unmercator((x0 + cols / 2) / n, (y0 + rows / 2) / n);
  return {
    frame: { width: cols * t.base + 2 * buf, height: rows * t.base + 2 * buf, ratio: t.scale, zoom: t.z + Math.log2(t.base / 512), center, bearing: 0, pitch: 0 },
    x0,
    y0,
    size: Math.max(cols, rows),
    cols,
    rows,
    offset: buf * t.scale,
    tilePixels: t.base * t.scale,
  };
}

/** Where one tile of a metatile lies in the frame's pixels. */
export function tileRect(plan: MetatilePlan, x: number, y: number): { left: number; top: number; width: number; height: number } {
  return { left: plan.offset + (x - plan.x0) * plan.tilePixels, top: plan.offset + (y - plan.y0) * plan.tilePixels, width: plan.tilePixels, height: plan.tilePixels };
}

export interface FramePart {
  frame: Frame;
  /** Where the part's useful pixels go in the whole image, and where they are in the part's own pixels. */
  left: number;
  top: number;
  width: number;
  height: number;
  cropLeft: number;
  cropTop: number;
}

/**
 * Splits a frame whose pixel size exceeds `maxFrame` into parts that each fit, drawn with `buffer` CSS pixels
 * of overlap so that labels near the seams are placed as in one frame. Only frames without pitch can be split
 * exactly (a pitched view is not the same under a shifted camera); those are returned whole and the caller
 * draws them at a lower ratio. A frame that fits is returned as its only part.
 */
export function splitFrame(frame: Frame, maxFrame: number, buffer: number): FramePart[] {
  const pw = Math.round(frame.width * frame.ratio);
  const ph = Math.round(frame.height * frame.ratio);
  const whole: FramePart = { frame, left: 0, top: 0, width: pw, height: ph, cropLeft: 0, cropTop: 0 };
  if ((pw <= maxFrame && ph <= maxFrame) || frame.pitch !== 0) return [whole];
  // Part sizes in CSS pixels, whole numbers so that parts meet exactly in device pixels at any integer ratio.
  const partCss = Math.floor(maxFrame / frame.ratio) - 2 * buffer;
  if (partCss < 64) return [whole];
  const cols = Math.ceil(frame.width / partCss);
  const rows = Math.ceil(frame.height / partCss);
  const cam: Camera = { ...frame };
  const parts: FramePart[] = [];
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const x = c * partCss;
      const y = r * partCss;
      const w = Math.min(partCss, frame.width - x);
      const h = Math.min(partCss, frame.height - y);
      // Offset of the part's centre from the frame's centre, in screen pixels.
      const dx = x + w / 2 - frame.width / 2;
      const dy = y + h / 2 - frame.height / 2;
      parts.push({
        frame: { ...frame, width: w + 2 * buffer, height: h + 2 * buffer, center: offsetCenter(cam, dx, dy) },
        left: x * frame.ratio,
        top: y * frame.ratio,
        width: w * frame.ratio,
        height: h * frame.ratio,
        cropLeft: buffer * frame.ratio,
        cropTop: buffer * frame.ratio,
      });
    }
  }
  return parts;
}
