// Overlays drawn as one SVG the size of the output image, composited over the rendered map with sharp.
// Geometry is projected with the frame's own camera (camera.ts); sizes are CSS pixels times the scale.
import { nearestWrap, project, type Camera } from './camera.js';
import type { GeoShape } from './geojson-overlay.js';
import { PIN_SIZES, svgColor, type LonLat, type MarkerOverlay, type PathOverlay, type Rgba } from './overlays.js';
import { iconKey, type IconMarker } from './tileserver-gl-grammar.js';

/** An icon's image, ready to draw: PNG bytes and its size in CSS pixels (a 2x sprite image is half its pixels). */
export interface IconImage {
  png: Buffer;
  width: number;
  height: number;
}

export interface Overlays {
  paths: PathOverlay[];
  markers: MarkerOverlay[];
  shapes: GeoShape[];
  /** Image markers (tileserver-gl's grammar); drawn only once their images are in `iconImages`. */
  icons: IconMarker[];
  /** The images of `icons` by `iconKey` (marker-icons.ts fetches them before the render). */
  iconImages?: ReadonlyMap<string, IconImage>;
  /** Text drawn in the bottom-right corner on a translucent white box (the sources' attribution). */
  attribution?: string;
  /** Text drawn in the bottom-left corner, translucent. */
  watermark?: string;
}

export const hasOverlays = (o: Overlays) => o.paths.length + o.markers.length + o.shapes.length + o.icons.length > 0 || !!o.attribution || !!o.watermark;

/** First and last point of a polygon farther apart than this (output pixels) get a closing segment. */
const CLOSE_DISTANCE = 0.5;
const FONT = 'DejaVu Sans, Liberation Sans, Arial, Helvetica, sans-serif';

const num = (n: number) => (Math.round(n * 100) / 100).toString();
const paint = (attr: 'stroke' | 'fill', c: Rgba) => `${attr}="${svgColor(c)}"${c.a < 1 ? ` ${attr}-opacity="${num(c.a)}"` : ''}`;
const escapeXml = (s: string) => s.replace(/[&<>"']/g, (ch) => `&#${ch.charCodeAt(0)};`);

/** Output-pixel positions of a geometry's points, all on the world copy nearest the centre (points behind the camera dropped). */
function screen(cam: Camera, ratio: number, points: readonly LonLat[]): [number, number][] {
  if (points.length === 0) return [];
  const wrap = nearestWrap(cam, points[0][0]);
  const out: [number, number][] = [];
  for (const [lon, lat] of points) {
    const p = project(cam, lon, lat, wrap);
    if (p) out.push([p[0] * ratio, p[1] * ratio]);
  }
  return out;
}

/** Path data of a line, or of a closed ring when `close` (auto-closed when its ends are apart). */
function pathData(pts: [number, number][], close: boolean): string {
  if (pts.length === 0) return '';
  let d = `M${num(pts[0][0])} ${num(pts[0][1])}`;
  for (let i = 1; i < pts.length; i++) d += `L${num(pts[i][0])} ${num(pts[i][1])}`;
  if (close) {
    const [fx, fy] = pts[0];
    const [lx, ly] = pts[pts.length - 1];
    if (Math.hypot(fx - lx, fy - ly) > CLOSE_DISTANCE) d += `L${num(fx)} ${num(fy)}`;
    d += 'Z';
  }
  return d;
}

function strokeAttrs(stroke: Rgba, width: number, ratio: number, cap = 'round', join = 'round'): string {
  if (width <= 0) return 'stroke="none"';
  return `${paint('stroke', stroke)} stroke-width="${num(width * ratio)}" stroke-linejoin="${join}" stroke-linecap="${cap}"`;
}

function drawPath(o: PathOverlay, cam: Camera, ratio: number): string {
  const d = pathData(screen(cam, ratio, o.points), o.closed);
  if (!d) return '';
  const fill = o.fill ? `${paint('fill', o.fill)} fill-rule="evenodd"` : 'fill="none"';
  // A border is the same line drawn first, wider by its width on each side.
  const border = o.border ? `<path d="${d}" fill="none" ${strokeAttrs(o.border.color, o.width + 2 * o.border.width, ratio, o.cap, o.join)}/>` : '';
  return `${border}<path d="${d}" ${fill} ${strokeAttrs(o.stroke, o.width, ratio, o.cap, o.join)}/>`;
}

/** Where the anchor sits in an icon, as fractions of its width and height from the top-left corner. */
const ANCHOR_AT: Record<IconMarker['anchor'], [number, number]> = {
  center: [0.5, 0.5],
  top: [0.5, 0],
  bottom: [0.5, 1],
  left: [0, 0.5],
  right: [1, 0.5],
  'top-left': [0, 0],
  'top-right': [1, 0],
  'bottom-left': [0, 1],
  'bottom-right': [1, 1],
};

/** Icon markers: each image once in <defs>, placed by <use> (fifty markers of one icon carry its bytes once). */
function drawIcons(icons: readonly IconMarker[], images: ReadonlyMap<string, IconImage> | undefined, cam: Camera, ratio: number): string {
  if (!images || icons.length === 0) return '';
  const ids = new Map<string, string>();
  let defs = '';
  let uses = '';
  for (const m of icons) {
    const key = iconKey(m.icon);
    const img = images.get(key);
    const [p] = screen(cam, ratio, [m.point]);
    if (!img || !p) continue;
    let id = ids.get(key);
    if (!id) {
      id = `icon${ids.size}`;
      ids.set(key, id);
      defs += `<image id="${id}" width="${num(img.width * ratio)}" height="${num(img.height * ratio)}" preserveAspectRatio="none" href="data:image/png;base64,${img.png.toString('base64')}"/>`;
    }
    const [fx, fy] = ANCHOR_AT[m.anchor];
    const x = p[0] + (m.offset[0] - fx * img.width) * m.scale * ratio;
    const y = p[1] + (m.offset[1] - fy * img.height) * m.scale * ratio;
    uses += `<use href="#${id}" transform="translate(${num(x)} ${num(y)})${m.scale === 1 ? '' : ` scale(${num(m.scale)})`}"/>`;
  }
  return defs ? `<defs>${defs}</defs>${uses}` : '';
}

/** Font size of the corner texts, CSS px (tileserver-gl's). */
const CAPTION_SIZE = 10;

/**
 * The attribution in the bottom-right corner on a translucent white box, and the watermark in the bottom-left, as
 * tileserver-gl draws them. SVG cannot measure text, so the box is sized from an average glyph width of DejaVu
 * Sans (0.6 em); the text is right-aligned inside it.
 */
function drawCaptions(o: Overlays, w: number, h: number, ratio: number): string {
  const size = CAPTION_SIZE * ratio;
  let out = '';
  if (o.watermark) {
    out += `<text x="${num(5 * ratio)}" y="${num(h - 5 * ratio)}" font-family="${FONT}" font-size="${num(size)}" fill="#000000" fill-opacity="0.4" stroke="#ffffff" stroke-opacity="0.4" stroke-width="${num(ratio)}" paint-order="stroke">${escapeXml(o.watermark)}</text>`;
  }
  if (o.attribution) {
    const pad = 6 * ratio;
    const textWidth = Math.min(w, o.attribution.length * 0.6 * size);
    const boxH = 14 * ratio + pad;
    out += `<rect x="${num(w - textWidth - pad)}" y="${num(h - boxH)}" width="${num(textWidth + pad)}" height="${num(boxH)}" fill="#ffffff" fill-opacity="0.8"/>`;
    out += `<text x="${num(w - pad / 2)}" y="${num(h - 6 * ratio)}" text-anchor="end" font-family="${FONT}" font-size="${num(size)}" fill="#000000" fill-opacity="0.8">${escapeXml(o.attribution)}</text>`;
  }
  return out;
}

function drawShape(s: GeoShape, cam: Camera, ratio: number): string {
  if (s.type === 'point') {
    const [p] = screen(cam, ratio, [s.point]);
    if (!p) return '';
    return `<circle cx="${num(p[0])}" cy="${num(p[1])}" r="${num((s.size / 2) * ratio)}" ${paint('fill', s.color)} stroke="#ffffff" stroke-width="${num(ratio)}"/>`;
  }
  if (s.type === 'line') {
    const d = pathData(screen(cam, ratio, s.points), false);
    return d ? `<path d="${d}" fill="none" ${strokeAttrs(s.stroke, s.width, ratio)}/>` : '';
  }
  const d = s.rings.map((r) => pathData(screen(cam, ratio, r), true)).join('');
  if (!d) return '';
  const fill = s.fill ? `${paint('fill', s.fill)} fill-rule="evenodd"` : 'fill="none"';
  return `<path d="${d}" ${fill} ${strokeAttrs(s.stroke, s.width, ratio)}/>`;
}

/** Relative luminance test: dark text on light pins, white on dark ones. */
const isLight = (c: Rgba) => 0.299 * c.r + 0.587 * c.g + 0.114 * c.b > 160;

/**
 * A pin whose tip is at the anchor: a round head above a tapering tail, filling the upper half of its box
 * (s 20x50, m 30x70, l 40x100). A small dot at the tip keeps the anchor pixel itself in the pin's colour.
 */
function drawMarker(o: MarkerOverlay, cam: Camera, ratio: number): string {
  const [p] = screen(cam, ratio, [o.point]);
  if (!p) return '';
  const box = PIN_SIZES[o.size];
  const r = (box.width / 2) * ratio;
  const half = (box.height / 2) * ratio;
  const [ax, ay] = p;
  const cy = ay - half + r;
  const join = cy + r * 0.55;
  const side = r * 0.83;
  const body =
    `M${num(ax - side)} ${num(join)}` +
    `A${num(r)} ${num(r)} 0 1 1 ${num(ax + side)} ${num(join)}` +
    `L${num(ax)} ${num(ay)}Z`;
  const colour = paint('fill', o.color);
  let out = `<path d="${body}" ${colour} stroke="rgba(0,0,0,0.35)" stroke-width="${num(ratio)}" stroke-linejoin="round"/>`;
  out += `<circle cx="${num(ax)}" cy="${num(ay)}" r="${num(Math.max(1.5, r * 0.18))}" ${colour}/>`;
  if (o.label) {
    const text = isLight(o.color) ? '#222222' : '#ffffff';
    out += `<text x="${num(ax)}" y="${num(cy)}" text-anchor="middle" dominant-baseline="central" font-family="${FONT}" font-weight="bold" font-size="${num(r * 1.1)}" fill="${text}">${escapeXml(o.label)}</text>`;
  } else {
    out += `<circle cx="${num(ax)}" cy="${num(cy)}" r="${num(r * 0.35)}" fill="#ffffff" fill-opacity="0.85"/>`;
  }
  return out;
}

/** The overlay image in output pixels (width and height already multiplied by `ratio`). */
export function overlaySvg(o: Overlays, cam: Camera, ratio: number): string {
  const w = Math.round(cam.width * ratio);
  const h = Math.round(cam.height * ratio);
  const parts = [
    ...o.shapes.map((s) => drawShape(s, cam, ratio)),
    ...o.paths.map((p) => drawPath(p, cam, ratio)),
    ...o.markers.map((m) => drawMarker(m, cam, ratio)),
    drawIcons(o.icons, o.iconImages, cam, ratio),
    drawCaptions(o, w, h, ratio),
  ];
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}">${parts.join('')}</svg>`;
}
