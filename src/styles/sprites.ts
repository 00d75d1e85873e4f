// Sprites: the image sheet and its metadata live beside the style file (decisions.md), named after the basename
// of the style's `sprite` URL (`osm-liberty.json`, `osm-liberty@2x.png`) or `sprite.json`/`sprite.png`.
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { LoadedStyle, SpriteScale } from './loaded-style.js';

export type { SpriteScale };
export type SpriteExt = 'png' | 'json';

export type SpriteFileParse = { ok: true; scale: SpriteScale; ext: SpriteExt } | { ok: false; problem: string };

/** Parses the last path segment of a sprite request: `sprite`, `@2x` or `@3x`, then `.png` or `.json`. */
export function parseSpriteFile(file: string): SpriteFileParse {
  const m = /^sprite(?:@(\d+)x)?\.([A-Za-z0-9]+)$/.exec(file);
  if (!m) return { ok: false, problem: `"${file}" is not sprite[@2x|@3x].png or .json` };
  const scale = m[1] === undefined ? 1 : Number(m[1]);
  if (scale !== 1 && scale !== 2 && scale !== 3) return { ok: false, problem: `sprite scale @${m[1]}x is not one of @2x, @3x` };
  const ext = m[2];
  if (ext !== 'png' && ext !== 'json') return { ok: false, problem: `sprite format ".${ext}" is not png or json` };
  return { ok: true, scale, ext };
}

const exists = (p: string) => access(p).then(
  () => true,
  () => false,
);

/** The path part of a sprite URL, whether absolute (`https://host/a/b`) or relative (`sprites/b`). */
function spritePath(url: string): { relative: boolean; pathname: string } {
  try {
    return { relative: false, pathname: decodeURIComponent(new URL(url).pathname) };
  } catch {
    return { relative: true, pathname: url.split(/[?#]/)[0] };
  }
}

/** True when `p` is `dir` or inside it (lexically). */
const inside = (dir: string, p: string) => p === dir || p.startsWith(dir + path.sep);

/**
 * Where the sprite files of a style are, as an absolute path without extension, or undefined with the places
 * looked at. A relative sprite URL (`sprites/osm-liberty`) is resolved against the style's folder, never
 * outside it; otherwise the basename of the URL and then `sprite` are looked for beside the style file.
 * Both the `.json` and the `.png` of scale 1 must exist.
 */
export async function findSpriteBase(styleDir: string, sprite: unknown): Promise<{ base: string | undefined; tried: string[] }> {
  if (typeof sprite !== 'string' || sprite === '') return { base: undefined, tried: [] };
  const { relative, pathname } = spritePath(sprite);
  const candidates: string[] = [];
  if (relative) {
    const resolved = path.resolve(styleDir, pathname);
    if (inside(styleDir, resolved)) candidates.push(resolved);
  }
  const name = path.posix.basename(pathname);
  if (name && name !== '.' && name !== '..') candidates.push(path.join(styleDir, name));
  candidates.push(path.join(styleDir, 'sprite'));
  const tried = [...new Set(candidates)];
  for (const base of tried) {
    if ((await exists(`${base}.json`)) && (await exists(`${base}.png`))) return { base, tried };
  }
  return { base: undefined, tried };
}

/** Name of the file for one scale and format, e.g. `osm-liberty@2x.png`. */
export const spriteFile = (base: string, scale: SpriteScale, ext: SpriteExt) => `${base}${scale === 1 ? '' : `@${scale}x`}.${ext}`;

/** The bytes of a sprite sheet or its metadata, or undefined when the style has no such file. */
export async function readSprite(style: LoadedStyle, scale: SpriteScale, ext: SpriteExt): Promise<Uint8Array | undefined> {
  const built = style.builtSprites?.get(scale);
  if (built) return built[ext];
  if (!style.spriteBase) return undefined;
  try {
    return await readFile(spriteFile(style.spriteBase, scale, ext));
  } catch (err) {
    if (['ENOENT', 'ENOTDIR', 'EISDIR'].includes((err as NodeJS.ErrnoException).code ?? '')) return undefined;
    throw err;
  }
}
