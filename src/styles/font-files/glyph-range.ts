// One glyph range (256 code points) of a font file as the glyphs protobuf MapLibre reads: for each glyph its id
// (code point), SDF bitmap, width, height, left, top and advance, at 24 px with a 3 px buffer.
// The distance fields come from @mapbox/tiny-sdf, the generator MapLibre GL JS itself uses for glyphs it draws
// locally, drawing the font on a canvas of @napi-rs/canvas (Skia) where a browser would use its own canvas.
// tiny-sdf measures each glyph's ink box in whole pixels (left edge floored, top ceiled) and puts the glyph's
// origin on a pixel corner; its metrics become the PBF's as the pre-built PBFs of the same font have them:
// width, height and left as they are, top measured from the font's ascender (rounded down to a pixel) rather
// than from the baseline, advance truncated to whole pixels. MapLibre draws its local glyphs at twice the size
// and halves the metrics; a glyphs PBF carries no scale, so these are drawn at 24 px.
import TinySDF from '@mapbox/tiny-sdf';
import { createCanvas } from '@napi-rs/canvas';
import type { Font } from 'fontkit';
import { PbfWriter } from 'pbf';

/** MapLibre's glyph size (ONE_EM) and the buffer around each bitmap. */
export const GLYPH_SIZE = 24;
export const GLYPH_BUFFER = 3;
/** The distance field of MapLibre's glyphs: 8 px either side, the edge at a quarter below the top (192). */
const SDF_RADIUS = 8;
const SDF_CUTOFF = 0.25;
/**
 * tiny-sdf sizes its canvas from the buffer it is built with (font size + 4 buffers) and clips larger glyphs.
 * Built with 12 and then set to 3, as MapLibre does for its wide clusters, glyphs up to 60 px (2.5 em) fit.
 */
const CANVAS_BUFFER = 12;

/** tiny-sdf drawing on a Skia canvas in Node instead of a browser's OffscreenCanvas. */
class CanvasSDF extends TinySDF {
  // Set after construction; `declare` keeps the class field from resetting what the base constructor set.
  declare buffer: number;

  constructor(family: string) {
    super({ fontSize: GLYPH_SIZE, buffer: CANVAS_BUFFER, radius: SDF_RADIUS, cutoff: SDF_CUTOFF, fontFamily: JSON.stringify(family) });
    this.buffer = GLYPH_BUFFER;
  }

  _createCanvas(size: number) {
    return createCanvas(size, size);
  }
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

/** The glyphs of one font: `font` (fontkit) says which code points it has and its ascender, `family` is the
 * name the font is registered under with the canvas. */
export class GlyphDrawer {
  private readonly sdf: CanvasSDF;
  private readonly ascender: number;

  constructor(private readonly font: Font, family: string) {
    this.sdf = new CanvasSDF(family);
    this.ascender = Math.floor((font.ascent * GLYPH_SIZE) / font.unitsPerEm);
  }

  /** One glyph at 24 px, or undefined when the font has none for `codePoint`. */
  glyph(codePoint: number): GlyphMetrics | undefined {
    // The canvas would draw a missing character from some other font: only the font's own are drawn.
    if (!this.font.hasGlyphForCodePoint(codePoint)) return undefined;
    const g = this.sdf.draw(String.fromCodePoint(codePoint));
    const advance = Math.max(0, Math.floor(g.glyphAdvance));
    if (g.glyphWidth === 0 || g.glyphHeight === 0) {
      return { id: codePoint, bitmap: undefined, width: 0, height: 0, left: 0, top: -this.ascender, advance };
    }
    return {
      id: codePoint,
      bitmap: new Uint8Array(g.data.buffer, g.data.byteOffset, g.data.byteLength),
      width: g.glyphWidth,
      height: g.glyphHeight,
      left: g.glyphLeft,
      top: g.glyphTop - this.ascender,
      advance,
    };
  }

  /** The glyphs PBF of the range from `start`, its stack named `name`. */
  range(name: string, start: number): Uint8Array {
    const pbf = new PbfWriter();
    pbf.writeMessage(
      1,
      (_: null, p: PbfWriter) => {
        p.writeStringField(1, name);
        p.writeStringField(2, `${start}-${start + 255}`);
        for (let cp = start; cp < start + 256; cp++) {
          const g = this.glyph(cp);
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
}
