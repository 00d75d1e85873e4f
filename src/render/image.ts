// Encoding rendered pixels with sharp (libvips works on its own threads, off the event loop), cutting tiles
// out of metatiles, joining the parts of a split frame and compositing overlays.
import sharp, { type Sharp } from 'sharp';
import type { ImageEncoding } from './image-encoding.js';
import type { ImageFormat } from './static-params.js';

export interface EncodeOptions {
  /** zlib level 0-9 of PNG output. */
  pngCompression: number;
  /** Qualities when the request names none. */
  jpegQuality: number;
  webpQuality: number;
  avifQuality: number;
}

/**
 * libaom's speed for AVIF (sharp's `effort`, 0-9, slower to faster is 9-0 there): 2 rather than sharp's default 4,
 * since a map image is encoded on every cache miss (bench/formats.bench.ts measures the cost against PNG and WebP).
 */
const AVIF_EFFORT = 2;

export interface RawImage {
  data: Uint8Array;
  width: number;
  height: number;
  /** True when every pixel is known to be opaque (the renderer's un-premultiply saw it): no scan needed. */
  opaque?: boolean;
}

export interface Rect {
  left: number;
  top: number;
  width: number;
  height: number;
}

const raw = (img: RawImage) => sharp(img.data, { raw: { width: img.width, height: img.height, channels: 4 } });

const whole = (img: RawImage): Rect => ({ left: 0, top: 0, width: img.width, height: img.height });

/**
 * Whether every pixel of a region has alpha 255. Most maps are opaque; their PNG and WebP are written without
 * an alpha channel, a quarter less data to compress (smaller output, less CPU). Stops at the first translucent pixel.
 */
export function isOpaque(img: RawImage, r: Rect = whole(img)): boolean {
  const d = img.data;
  for (let y = r.top; y < r.top + r.height; y++) {
    const end = ((y * img.width + r.left + r.width) << 2) + 3;
    for (let i = ((y * img.width + r.left) << 2) + 3; i < end; i += 4) if (d[i] !== 255) return false;
  }
  return true;
}

/** `opaque`: the pixels (before any overlay drawn over them) have no translucency, so the output needs no alpha. */
function encode(pipeline: Sharp, e: ImageEncoding, o: EncodeOptions, opaque: boolean): Promise<Buffer> {
  const p = opaque ? pipeline.removeAlpha() : pipeline;
  switch (e.format) {
    case 'png':
      // Adaptive filtering off: within a few percent of the smallest output at a fraction of the time.
      return p.png({ compressionLevel: o.pngCompression, adaptiveFiltering: false }).toBuffer();
    case 'jpeg':
      return pipeline.flatten({ background: '#ffffff' }).jpeg({ quality: e.quality ?? o.jpegQuality }).toBuffer();
    case 'webp':
      return (e.lossless ? p.webp({ lossless: true, effort: 2 }) : p.webp({ quality: e.quality ?? o.webpQuality, effort: 2 })).toBuffer();
    case 'avif':
      return (e.lossless ? p.avif({ lossless: true, effort: AVIF_EFFORT }) : p.avif({ quality: e.quality ?? o.avifQuality, effort: AVIF_EFFORT })).toBuffer();
  }
}

/** Whether the format's encoder uses the opacity scan (JPEG has no alpha anyway). */
const needsScan = (format: ImageFormat) => format !== 'jpeg';

/** Whether a region needs no alpha channel: known from the renderer, or found by a scan. */
const opaqueRegion = (img: RawImage, r?: Rect) => img.opaque === true || isOpaque(img, r);

export function encodeImage(img: RawImage, e: ImageEncoding, o: EncodeOptions): Promise<Buffer> {
  return encode(raw(img), e, o, needsScan(e.format) && opaqueRegion(img));
}

/** One tile of a metatile, encoded. */
export function encodeRegion(img: RawImage, r: Rect, e: ImageEncoding, o: EncodeOptions): Promise<Buffer> {
  if (r.left === 0 && r.top === 0 && r.width === img.width && r.height === img.height) return encodeImage(img, e, o);
  return encode(raw(img).extract(r), e, o, needsScan(e.format) && opaqueRegion(img, r));
}

/** A region of an image as raw pixels (a row copy, no codec). */
export function cropRaw(img: RawImage, r: Rect): RawImage {
  if (r.left === 0 && r.top === 0 && r.width === img.width && r.height === img.height) return img;
  const out = new Uint8Array(r.width * r.height * 4);
  for (let y = 0; y < r.height; y++) {
    const from = ((r.top + y) * img.width + r.left) * 4;
    out.set(img.data.subarray(from, from + r.width * 4), y * r.width * 4);
  }
  return { data: out, width: r.width, height: r.height, opaque: img.opaque };
}

/** Pastes `part` into `into` at (left, top). */
export function pasteRaw(into: RawImage, part: RawImage, left: number, top: number): void {
  for (let y = 0; y < part.height; y++) {
    const from = y * part.width * 4;
    into.data.set(part.data.subarray(from, from + part.width * 4), ((top + y) * into.width + left) * 4);
  }
}

/** Scales an image to width x height (a pitched frame drawn at a lower ratio than asked). */
export async function resizeRaw(img: RawImage, width: number, height: number): Promise<RawImage> {
  const data = await raw(img).resize(width, height, { fit: 'fill' }).raw().toBuffer();
  return { data, width, height, opaque: img.opaque };
}

/** The image with an SVG drawn over it, encoded. */
export function encodeWithOverlay(img: RawImage, svg: string | undefined, e: ImageEncoding, o: EncodeOptions): Promise<Buffer> {
  if (!svg) return encodeImage(img, e, o);
  // An overlay drawn over an opaque map leaves it opaque.
  return encode(raw(img).composite([{ input: Buffer.from(svg), left: 0, top: 0 }]), e, o, needsScan(e.format) && opaqueRegion(img));
}
