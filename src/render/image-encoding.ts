// How a rendered image is encoded: its format (PNG, JPEG, WebP, AVIF), the quality of a lossy one and whether a
// WebP or AVIF is lossless; read from a request (`?quality=`, `?lossless=`, and the `Accept` header where the URL
// leaves the format open with `auto`), and named in the image caches' keys so that each variant is its own entry.
import type { RenderPriority } from './priority-queue.js';
import type { Checked, ImageFormat } from './static-params.js';

export interface ImageEncoding {
  format: ImageFormat;
  /** 1-100 for JPEG, WebP and AVIF; undefined: the configured `render.*_quality`. */
  quality?: number;
  /** WebP and AVIF only. */
  lossless?: boolean;
}

/** The formats `auto` may choose, the server's preference first when the client likes several equally. */
const NEGOTIABLE: readonly ImageFormat[] = ['webp', 'avif', 'png', 'jpeg'];
const MEDIA: Record<ImageFormat, string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp', avif: 'image/avif' };

/**
 * The format of an `auto` request from its Accept header: among the image types the client names (WebP, AVIF, PNG,
 * JPEG), the one it gives the highest q; on a tie the cheaper to encode (WebP before AVIF: an AVIF costs several
 * times the CPU). A client that names none of them (no header, `*\/*`, `image/*`) gets PNG, which every client reads.
 */
export function negotiateFormat(accept: string | undefined): ImageFormat {
  if (!accept) return 'png';
  const q = new Map<string, number>();
  for (const item of accept.split(',').slice(0, 64)) {
    const [range, ...params] = item.trim().toLowerCase().split(';');
    let value = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([01](?:\.\d{0,3})?)\s*$/.exec(p);
      if (m) value = Math.min(1, Number(m[1]));
    }
    q.set(range.trim(), value);
  }
  let best: ImageFormat = 'png';
  let bestQ = 0;
  for (const f of NEGOTIABLE) {
    const v = q.get(MEDIA[f]) ?? 0;
    if (v > bestQ) {
      best = f;
      bestQ = v;
    }
  }
  return best;
}

export type Bad = { parameter: string; detail: string };

/**
 * The encoding a request asks for. `format` undefined means `auto` (negotiated from `accept`); `quality` is 1-100
 * and applies to the lossy formats (an explicit PNG with a quality is refused; an `auto` that lands on PNG ignores
 * it); `lossless` is true/false and applies to WebP and AVIF. `defaults` are the configured qualities: asking for
 * one of them is the same image, and the same cache entry, as asking for none.
 */
export function requestEncoding(
  format: ImageFormat | undefined,
  q: { quality: string | undefined; lossless: string | undefined; accept: string | undefined },
  defaults: Record<Exclude<ImageFormat, 'png'>, number>,
): Checked<{ encoding: ImageEncoding; negotiated: boolean }> {
  const negotiated = format === undefined;
  const f = format ?? negotiateFormat(q.accept);
  const bad = (parameter: string, detail: string) => ({ ok: false as const, problem: { parameter, detail } });
  let lossless = false;
  if (q.lossless !== undefined && q.lossless !== '') {
    if (!['true', 'false', '1', '0'].includes(q.lossless)) return bad('lossless', `lossless "${q.lossless.slice(0, 40)}" is not true or false`);
    lossless = q.lossless === 'true' || q.lossless === '1';
  }
  if (lossless && f === 'jpeg' && !negotiated) return bad('lossless', 'JPEG has no lossless mode: lossless applies to webp and avif (PNG is always lossless)');
  let quality: number | undefined;
  if (q.quality !== undefined && q.quality !== '') {
    if (!/^[0-9]{1,3}$/.test(q.quality) || Number(q.quality) < 1 || Number(q.quality) > 100) return bad('quality', `quality "${q.quality.slice(0, 40)}" is not an integer 1..100`);
    if (f === 'png' && !negotiated) return bad('quality', 'PNG is lossless: quality applies to jpg, webp and avif');
    if (lossless && (f === 'webp' || f === 'avif')) return bad('quality', 'quality and lossless=true exclude each other');
    if (f !== 'png') quality = Number(q.quality);
  }
  const encoding: ImageEncoding = { format: f };
  if (f !== 'png' && quality !== undefined && quality !== defaults[f]) encoding.quality = quality;
  if (lossless && (f === 'webp' || f === 'avif')) encoding.lossless = true;
  return { ok: true, value: { encoding, negotiated } };
}

/** The extension of a format in URLs and cache keys. */
export const extOf = (f: ImageFormat) => (f === 'jpeg' ? 'jpg' : f);

/** The name of an encoding in cache keys: `png`, `jpg`, `webp-q70`, `webp-lossless`, `avif`. */
export function variantOf(e: ImageEncoding): string {
  return `${extOf(e.format)}${e.quality !== undefined ? `-q${e.quality}` : ''}${e.lossless ? '-lossless' : ''}`;
}

/** The query that asks for an encoding's quality and losslessness again (a tile forwarded to its owner process). */
export function encodingQuery(e: ImageEncoding): string[] {
  const out: string[] = [];
  if (e.quality !== undefined) out.push(`quality=${e.quality}`);
  if (e.lossless) out.push('lossless=true');
  return out;
}

/**
 * The zlib level the Chromium page deflates a frame's PNG tiles at: `seed_png_compression` for a bulk render
 * (seeding: written once into an archive or a cache, so bytes weigh more than CPU), `png_compression` for any
 * other (someone is waiting, or an expired tile is drawn again).
 */
export function pagePngLevel(levels: { png_compression: number; seed_png_compression: number }, priority: RenderPriority | undefined): number {
  return priority === 'bulk' ? levels.seed_png_compression : levels.png_compression;
}
