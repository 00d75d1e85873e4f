// Sprite sheets built from a folder of SVG icons (`[[styles]] sprite_dir`): every `NAME.svg` becomes the icon
// NAME. Icons are rasterised by sharp (librsvg) at each pixel ratio, laid out once by potpack (the packer
// MapLibre itself uses for its glyph and icon atlases) at 1x, and every ratio uses that layout multiplied, so
// the @2x and @3x sheets and their JSON are exactly double and triple the 1x ones. With `sdf`, each icon is a
// white image whose alpha is a signed distance field (sdf.ts) and its entry says `"sdf": true`, so a style can
// colour it with `icon-color`.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import potpack from 'potpack';
import sharp from 'sharp';
import { ConfigError } from '../config/errors.js';
import { sdfFromAlpha } from './sdf.js';
import type { SpriteScale } from './sprites.js';

export const SPRITE_SCALES: readonly SpriteScale[] = [1, 2, 3];
/** Transparent pixels between icons (1x), so that linear sampling of one never bleeds into its neighbour. */
const GAP = 1;
/** Room around an SDF icon (1x pixels) for its field to fall off in (halos, `icon-halo-width`). */
const SDF_BUFFER = 3;
/** Longest side of one icon at 1x; a bigger SVG is most likely a mistake (a map, not an icon). */
const MAX_ICON = 1024;

export interface SpriteFiles {
  png: Buffer;
  json: Buffer;
}

/** The sheets of one folder, per pixel ratio, and a digest of what they were built from. */
export interface BuiltSprites {
  sheets: ReadonlyMap<SpriteScale, SpriteFiles>;
  icons: number;
}

export type IconNameParse = { ok: true; name: string } | { ok: false; problem: string } | { ok: 'skip' };

/**
 * The icon name of a file in a sprite folder: the file name without `.svg`. Other files (and hidden ones,
 * editors' leftovers) are skipped; a name with a control character, or nothing before `.svg`, is refused.
 */
export function iconName(file: string): IconNameParse {
  if (file.startsWith('.') || !/\.svg$/i.test(file)) return { ok: 'skip' };
  const name = file.slice(0, -'.svg'.length);
  if (name === '') return { ok: false, problem: `"${file}" has no name before .svg` };
  if (/[\u0000-\u001f\u007f]/.test(name)) return { ok: false, problem: `${JSON.stringify(file)}: an icon name has no control characters` };
  return { ok: true, name };
}

interface Icon {
  name: string;
  svg: Buffer;
  /** Size at 1x, buffer included. */
  w: number;
  h: number;
  /** Layout at 1x (potpack fills these in). */
  x: number;
  y: number;
}

/** Whole pixels of an SVG at 1x (its width and height in CSS pixels, rounded up). */
async function iconSize(file: string, svg: Buffer): Promise<{ w: number; h: number }> {
  let meta;
  try {
    meta = await sharp(svg, { density: 72 }).metadata();
  } catch (err) {
    throw new ConfigError(`${file}: not a readable SVG: ${(err as Error).message.split('\n')[0]}`);
  }
  const w = Math.ceil(meta.width ?? 0);
  const h = Math.ceil(meta.height ?? 0);
  if (w < 1 || h < 1) throw new ConfigError(`${file}: the SVG has no size (give it width and height, or a viewBox)`);
  if (w > MAX_ICON || h > MAX_ICON) throw new ConfigError(`${file}: ${w}x${h} px is larger than an icon may be (${MAX_ICON} px a side)`);
  return { w, h };
}

/** The icon at pixel ratio `scale`, exactly (w*scale)x(h*scale) RGBA, its shape centred in any SDF buffer. */
async function rasterise(icon: Icon, scale: SpriteScale, sdf: boolean): Promise<Buffer> {
  const buffer = sdf ? SDF_BUFFER * scale : 0;
  const w = icon.w * scale;
  const h = icon.h * scale;
  const inner = await sharp(icon.svg, { density: 72 * scale })
    .resize(w - 2 * buffer, h - 2 * buffer, { fit: 'fill' })
    .extend({ top: buffer, bottom: buffer, left: buffer, right: buffer, background: { r: 0, g: 0, b: 0, alpha: 0 } })
    .ensureAlpha()
    .raw()
    .toBuffer();
  if (!sdf) return inner;
  const alpha = new Uint8Array(w * h);
  for (let i = 0; i < alpha.length; i++) alpha[i] = inner[i * 4 + 3];
  const field = sdfFromAlpha(alpha, w, h);
  const out = Buffer.alloc(w * h * 4, 255);
  for (let i = 0; i < field.length; i++) out[i * 4 + 3] = field[i];
  return out;
}

/** Builds the 1x, 2x and 3x sheets of the SVG files in `dir`. Throws ConfigError naming the folder or file. */
export async function buildSprites(dir: string, sdf: boolean): Promise<BuiltSprites> {
  let files: string[];
  try {
    files = (await readdir(dir)).sort();
  } catch (err) {
    throw new ConfigError(`sprite_dir: cannot read ${dir}: ${(err as Error).message}`);
  }
  const icons: Icon[] = [];
  for (const file of files) {
    const parsed = iconName(file);
    if (parsed.ok === 'skip') continue;
    if (!parsed.ok) throw new ConfigError(`sprite_dir ${dir}: ${parsed.problem}`);
    const full = path.join(dir, file);
    const svg = await readFile(full);
    const { w, h } = await iconSize(full, svg);
    const pad = sdf ? 2 * SDF_BUFFER : 0;
    icons.push({ name: parsed.name, svg, w: w + pad, h: h + pad, x: 0, y: 0 });
  }
  const names = new Set<string>();
  for (const i of icons) {
    // `a.svg` and `a.SVG` name one icon; the sheet can hold it once.
    if (names.has(i.name)) throw new ConfigError(`sprite_dir ${dir}: two files name the icon "${i.name}"`);
    names.add(i.name);
  }
  // potpack places the boxes (it sets their x and y); the gap is on each box's right and bottom.
  const boxes = icons.map((icon) => ({ w: icon.w + GAP, h: icon.h + GAP, x: 0, y: 0, icon }));
  const { w: sheetW, h: sheetH } = icons.length ? potpack(boxes) : { w: 1, h: 1 };
  for (const b of boxes) [b.icon.x, b.icon.y] = [b.x, b.y];

  const sheets = new Map<SpriteScale, SpriteFiles>();
  for (const scale of SPRITE_SCALES) {
    const layers = await Promise.all(
      icons.map(async (icon) => ({
        input: await rasterise(icon, scale, sdf),
        raw: { width: icon.w * scale, height: icon.h * scale, channels: 4 as const },
        left: icon.x * scale,
        top: icon.y * scale,
      })),
    );
    const png = await sharp({ create: { width: Math.max(1, sheetW * scale), height: Math.max(1, sheetH * scale), channels: 4, background: { r: 0, g: 0, b: 0, alpha: 0 } } })
      .composite(layers)
      .png()
      .toBuffer();
    const index: Record<string, { x: number; y: number; width: number; height: number; pixelRatio: number; sdf?: true }> = {};
    for (const icon of icons) {
      index[icon.name] = { x: icon.x * scale, y: icon.y * scale, width: icon.w * scale, height: icon.h * scale, pixelRatio: scale, ...(sdf ? { sdf: true as const } : {}) };
    }
    sheets.set(scale, { png, json: Buffer.from(JSON.stringify(index)) });
  }
  return { sheets, icons: icons.length };
}
