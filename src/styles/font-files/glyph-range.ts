// One glyph range (256 code points) of a font file as the glyphs protobuf MapLibre reads: for each glyph its id
// (code point), SDF bitmap, width, height, left, top and advance, at 24 px with a 3 px buffer. The numbers follow
// what the font-maker tools (sdf-glyph-foundry) write, checked against pre-built PBFs of the same font: outline
// box and left edge rounded to whole pixels, advance truncated, top measured from the font's ascender.
// The distance field comes straight from the outline (distance to the nearest edge of the flattened contours,
// inside or outside by the non-zero winding rule) rather than from a rasterised image: exact, and no rasteriser.
import type { Font, Glyph } from 'fontkit';
import { PbfWriter } from 'pbf';
import { SDF_EDGE, SDF_RADIUS } from '../sdf.js';

/** MapLibre's glyph size (ONE_EM) and the buffer around each bitmap. */
export const GLYPH_SIZE = 24;
export const GLYPH_BUFFER = 3;

/** Line segments (x0, y0, x1, y1, ...) of a glyph's contours in pixels, y up. */
function flatten(glyph: Glyph, scale: number): number[] {
  const out: number[] = [];
  let sx = 0;
  let sy = 0;
  let cx = 0;
  let cy = 0;
  const line = (x: number, y: number) => {
    out.push(cx, cy, x, y);
    cx = x;
    cy = y;
  };
  // Curves are cut into pieces about half a pixel long at 24 px: finer than the field can show.
  const pieces = (len: number) => Math.max(2, Math.min(16, Math.ceil(len * 2)));
  for (const { command, args } of glyph.path.commands) {
    const a = args.map((v) => v * scale);
    switch (command) {
      case 'moveTo':
        if (cx !== sx || cy !== sy) line(sx, sy);
        [sx, sy, cx, cy] = [a[0], a[1], a[0], a[1]];
        break;
      case 'lineTo':
        line(a[0], a[1]);
        break;
      case 'quadraticCurveTo': {
        const [x0, y0] = [cx, cy];
        const n = pieces(Math.hypot(a[0] - x0, a[1] - y0) + Math.hypot(a[2] - a[0], a[3] - a[1]));
        for (let i = 1; i <= n; i++) {
          const t = i / n;
          const u = 1 - t;
          line(u * u * x0 + 2 * u * t * a[0] + t * t * a[2], u * u * y0 + 2 * u * t * a[1] + t * t * a[3]);
        }
        break;
      }
      case 'bezierCurveTo': {
        const [x0, y0] = [cx, cy];
        const n = pieces(Math.hypot(a[0] - x0, a[1] - y0) + Math.hypot(a[2] - a[0], a[3] - a[1]) + Math.hypot(a[4] - a[2], a[5] - a[3]));
        for (let i = 1; i <= n; i++) {
          const t = i / n;
          const u = 1 - t;
          line(
            u * u * u * x0 + 3 * u * u * t * a[0] + 3 * u * t * t * a[2] + t * t * t * a[4],
            u * u * u * y0 + 3 * u * u * t * a[1] + 3 * u * t * t * a[3] + t * t * t * a[5],
          );
        }
        break;
      }
      case 'closePath':
        line(sx, sy);
        break;
    }
  }
  if (cx !== sx || cy !== sy) line(sx, sy);
  return out;
}

/** The SDF bitmap of a glyph's segments over a (w x h) grid whose top-left pixel corner is at (x0, y0), y up. */
function fieldOf(segs: number[], x0: number, y0: number, w: number, h: number): Uint8Array {
  const out = new Uint8Array(w * h);
  const cutoff = 1 - SDF_EDGE / 255;
  for (let j = 0; j < h; j++) {
    const py = y0 - j - 0.5;
    for (let i = 0; i < w; i++) {
      const px = x0 + i + 0.5;
      let best = Infinity;
      let winding = 0;
      for (let k = 0; k < segs.length; k += 4) {
        const ax = segs[k];
        const ay = segs[k + 1];
        const bx = segs[k + 2];
        const by = segs[k + 3];
        const dx = bx - ax;
        const dy = by - ay;
        const len2 = dx * dx + dy * dy;
        const t = len2 > 0 ? Math.max(0, Math.min(1, ((px - ax) * dx + (py - ay) * dy) / len2)) : 0;
        const ex = ax + t * dx - px;
        const ey = ay + t * dy - py;
        const d2 = ex * ex + ey * ey;
        if (d2 < best) best = d2;
        // Non-zero winding: a ray to the right of the pixel centre, crossing edges upwards or downwards.
        if (ay <= py ? by > py && dx * (py - ay) - (px - ax) * dy > 0 : by <= py && dx * (py - ay) - (px - ax) * dy < 0) {
          winding += ay <= py ? 1 : -1;
        }
      }
      const d = Math.sqrt(best) * (winding !== 0 ? -1 : 1);
      out[j * w + i] = Math.max(0, Math.min(255, Math.round(255 - 255 * (d / SDF_RADIUS + cutoff))));
    }
  }
  return out;
}

export interface GlyphMetrics {
  id: number;
  bitmap: Uint8Array | undefined;
  width: number;
  height: number;
  left: number;
  top: number;
  advance: number;
}

/** One glyph at 24 px, or undefined when the font has none for `codePoint`. */
export function renderGlyph(font: Font, codePoint: number): GlyphMetrics | undefined {
  if (!font.hasGlyphForCodePoint(codePoint)) return undefined;
  const glyph = font.glyphForCodePoint(codePoint);
  const scale = GLYPH_SIZE / font.unitsPerEm;
  const ascender = Math.floor(font.ascent * scale);
  const advance = Math.max(0, Math.floor(glyph.advanceWidth * scale));
  const segs = flatten(glyph, scale);
  if (segs.length === 0) return { id: codePoint, bitmap: undefined, width: 0, height: 0, left: 0, top: -ascender, advance };
  let [minX, minY, maxX, maxY] = [Infinity, Infinity, -Infinity, -Infinity];
  for (let k = 0; k < segs.length; k += 2) {
    minX = Math.min(minX, segs[k]);
    maxX = Math.max(maxX, segs[k]);
    minY = Math.min(minY, segs[k + 1]);
    maxY = Math.max(maxY, segs[k + 1]);
  }
  const left = Math.round(minX);
  const bottom = Math.round(minY);
  const top = Math.round(maxY);
  const width = Math.max(0, Math.round(maxX) - left);
  const height = Math.max(0, top - bottom);
  if (width === 0 || height === 0) return { id: codePoint, bitmap: undefined, width: 0, height: 0, left: 0, top: -ascender, advance };
  const bitmap = fieldOf(segs, left - GLYPH_BUFFER, top + GLYPH_BUFFER, width + 2 * GLYPH_BUFFER, height + 2 * GLYPH_BUFFER);
  return { id: codePoint, bitmap, width, height, left, top: top - ascender, advance };
}

/** The glyphs PBF of one range of `font`, its stack named `name`. */
export function glyphRange(font: Font, name: string, start: number): Uint8Array {
  const pbf = new PbfWriter();
  pbf.writeMessage(
    1,
    (_: null, p: PbfWriter) => {
      p.writeStringField(1, name);
      p.writeStringField(2, `${start}-${start + 255}`);
      for (let cp = start; cp < start + 256; cp++) {
        const g = renderGlyph(font, cp);
        if (!g) continue;
        p.writeMessage(
          3,
          (m: GlyphMetrics, q: PbfWriter) => {
            q.writeVarintField(1, m.id);
            if (m.bitmap) q.writeBytesField(2, m.bitmap);
            q.writeVarintField(3, m.width);
            q.writeVarintField(4, m.height);
            q.writeSVarintField(5, m.left);
            q.writeSVarintField(6, m.top);
            q.writeVarintField(7, m.advance);
          },
          g,
        );
      }
    },
    null,
  );
  return pbf.finish();
}
