// Font files in the fonts directory (`.ttf`, `.otf`, `.ttc`): each font is served under the name it declares,
// its family and style joined (`Noto Sans` + `Regular` → `Noto Sans Regular`), the name a style's `text-font`
// uses. A collection (`.ttc`) holds several fonts, each with its own name.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import * as fontkit from 'fontkit';
import { fontNameProblem } from '../font-name.js';

/** One font of a font file, as the glyph generator opens it again (in its thread). */
export interface FontFileRef {
  file: string;
  /** Picks the font out of a collection; the only font of a plain file has one too. */
  postscriptName: string;
  /**
   * SHA-256 (hex, 32 digits) of the file's bytes when it was listed: part of the glyph cache's key (a replaced file
   * is read anew) and of rendered images' cache identity, the same on every machine with the same file.
   */
  version: string;
  /** Starts of the 256-code-point ranges the font has at least one glyph in. */
  ranges: ReadonlySet<number>;
}

export const FONT_FILE = /\.(ttf|otf|ttc)$/i;

/**
 * The name a font is served under: family and style as the file declares them, white space collapsed; undefined
 * when that cannot be a font name of a glyph URL (empty, a comma, a path separator, a control character, too long).
 */
export function declaredFontName(family: string | undefined, style: string | undefined): string | undefined {
  const name = [family, style].filter((p): p is string => typeof p === 'string').join(' ').replace(/\s+/g, ' ').trim();
  // A comma separates the fonts of a glyph URL's stack: such a name could never be asked for.
  if (name === '' || name.includes(',') || fontNameProblem(name)) return undefined;
  return name;
}

/** The fonts of the font files directly in `dir`, by name; unreadable files and names are reported, not fatal. */
export async function scanFontFiles(dir: string, warn: (msg: string) => void): Promise<Map<string, FontFileRef>> {
  const out = new Map<string, FontFileRef>();
  const entries = await readdir(dir, { withFileTypes: true });
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (e.name.startsWith('.') || !FONT_FILE.test(e.name) || !(e.isFile() || e.isSymbolicLink())) continue;
    const file = path.join(dir, e.name);
    let fonts: fontkit.Font[];
    let version: string;
    try {
      const bytes = await readFile(file);
      version = createHash('sha256').update(bytes).digest('hex').slice(0, 32);
      const opened = fontkit.create(bytes);
      fonts = 'fonts' in opened ? opened.fonts : [opened];
    } catch (err) {
      warn(`fonts: ${file} is not a readable font file: ${(err as Error).message}`);
      continue;
    }
    for (const font of fonts) {
      const name = declaredFontName(font.familyName, font.subfamilyName);
      if (!name) {
        warn(`fonts: ${file}: the font's family and style (${JSON.stringify(font.familyName)}, ${JSON.stringify(font.subfamilyName)}) make no usable font name`);
        continue;
      }
      if (out.has(name)) {
        warn(`fonts: ${file} declares "${name}", which ${out.get(name)!.file} declares too; the first is served`);
        continue;
      }
      const ranges = new Set(font.characterSet.map((cp) => cp - (cp % 256)));
      out.set(name, { file, postscriptName: font.postscriptName, version, ranges });
    }
  }
  return out;
}
