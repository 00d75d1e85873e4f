// Font glyphs: the fonts directory holds one folder per font name with `START-END.pbf` range files, and font
// files (`.ttf`, `.otf`, `.ttc`) whose ranges are generated on demand (font-files/). A request names a
// comma-separated fallback stack and one 256-code-point range; each font of the stack, of either kind, is
// asked in turn for that range.
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { PbfWriter } from 'pbf';
import { ConfigError } from '../config/errors.js';
import { fontFileGlyphs } from './font-files/glyph-pool.js';
import { scanFontFiles, type FontFileRef } from './font-files/scan.js';
import { fontNameProblem } from './font-name.js';

export { fontNameProblem };

export interface GlyphRange {
  start: number;
  end: number;
}

/** Glyph ranges cover 256 code points each; the last one of the Basic Multilingual Plane starts here. */
export const RANGE_SIZE = 256;
export const MAX_RANGE_START = 65280;

/**
 * Parses `N-M` where N is a multiple of 256 (at most 65280) and M = N+255, written in plain decimal.
 * Anything else is malformed: a renderer only ever asks for whole aligned ranges.
 */
export function parseRange(text: string): GlyphRange | undefined {
  const m = /^(0|[1-9]\d{0,5})-(0|[1-9]\d{0,5})$/.exec(text);
  if (!m) return undefined;
  const start = Number(m[1]);
  const end = Number(m[2]);
  if (start % RANGE_SIZE !== 0 || start > MAX_RANGE_START || end !== start + RANGE_SIZE - 1) return undefined;
  return { start, end };
}

export type FontstackParse = { ok: true; fonts: string[] } | { ok: false; problem: string };

/**
 * Splits a decoded fontstack on commas. Names are trimmed (hand-written glyph URLs often have ", ")
 * and duplicates dropped; every name must be a plain folder name.
 */
export function parseFontstack(text: string): FontstackParse {
  const fonts: string[] = [];
  for (const raw of text.split(',')) {
    const name = raw.trim();
    if (name === '') continue;
    const problem = fontNameProblem(name);
    if (problem) return { ok: false, problem };
    if (!fonts.includes(name)) fonts.push(name);
  }
  if (fonts.length === 0) return { ok: false, problem: 'the font stack names no font' };
  return { ok: true, fonts };
}

export type GlyphsResult =
  /** `font` is the font whose file was sent, or undefined when no font of the stack has this range (empty PBF). */
  | { kind: 'ok'; bytes: Uint8Array; font: string | undefined }
  | { kind: 'unknown-font'; fonts: string[] }
  | { kind: 'bad-range'; problem: string }
  | { kind: 'bad-font-name'; problem: string };

/** A glyphs PBF with one empty fontstack entry: what a font-maker writes for a range the font has no glyph in. */
export function emptyGlyphs(name: string, range: GlyphRange): Uint8Array {
  const pbf = new PbfWriter();
  pbf.writeMessage(
    1,
    (_: null, p: PbfWriter) => {
      p.writeStringField(1, name);
      p.writeStringField(2, `${range.start}-${range.end}`);
    },
    null,
  );
  return pbf.finish();
}

/** Some font sets store their ranges gzipped; callers (HTTP, renderers) always get the plain protobuf. */
const plain = (bytes: Buffer): Uint8Array => (bytes[0] === 0x1f && bytes[1] === 0x8b ? gunzipSync(bytes) : bytes);

const isMissing = (err: unknown) => ['ENOENT', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '');

async function isDirectory(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Reads one glyph range for a fallback stack. The first font of the stack that has the range file is sent;
 * when fonts of the stack exist but none has the range, an empty glyphs PBF is sent (a renderer must never
 * stall on a missing range); when no font of the stack exists, the font is unknown.
 */
export async function readGlyphs(fonts: FontIndex, fontstack: string, range: string): Promise<GlyphsResult> {
  const fontsDir = fonts.dir;
  const parsedRange = parseRange(range);
  if (!parsedRange) {
    return { kind: 'bad-range', problem: `range "${range}" is not N-M with N a multiple of 256 (0..${MAX_RANGE_START}) and M = N+255` };
  }
  const stack = parseFontstack(fontstack);
  if (!stack.ok) return { kind: 'bad-font-name', problem: stack.problem };
  if (!fontsDir) return { kind: 'unknown-font', fonts: stack.fonts };
  const file = `${parsedRange.start}-${parsedRange.end}.pbf`;
  let firstKnown: string | undefined;
  for (const font of stack.fonts) {
    const dir = path.join(fontsDir, font);
    try {
      return { kind: 'ok', bytes: plain(await readFile(path.join(dir, file))), font };
    } catch (err) {
      if (!isMissing(err)) throw err;
    }
    // A font file of that name (a PBF folder of the same name comes first: it was built on purpose).
    const ref = fonts.files.get(font);
    if (ref?.ranges.has(parsedRange.start)) return { kind: 'ok', bytes: await fontFileGlyphs(ref, font, parsedRange.start), font };
    if (firstKnown === undefined && (ref || (await isDirectory(dir)))) firstKnown = font;
  }
  if (firstKnown === undefined) return { kind: 'unknown-font', fonts: stack.fonts };
  return { kind: 'ok', bytes: emptyGlyphs(stack.fonts.join(','), parsedRange), font: undefined };
}

export interface FontIndex {
  /** Absolute fonts directory, when one is configured. */
  dir: string | undefined;
  /** Font names (folders holding at least one range file, and the fonts of font files), sorted. */
  names: readonly string[];
  /** The fonts of the font files in the directory, by the name each declares. */
  files: ReadonlyMap<string, FontFileRef>;
  /** Font files that could not be listed (logged once per configuration). */
  warnings: readonly string[];
}

/** Lists the fonts of a directory once per state; a configured directory that is missing stops start-up. */
export async function loadFontIndex(dir: string | undefined): Promise<FontIndex> {
  if (!dir) return { dir, names: [], files: new Map(), warnings: [] };
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    throw new ConfigError(`fonts: cannot read the fonts directory ${dir}: ${(err as Error).message}`);
  }
  const names: string[] = [];
  for (const e of entries) {
    if (e.name.startsWith('.') || !(e.isDirectory() || e.isSymbolicLink())) continue;
    try {
      const files = await readdir(path.join(dir, e.name));
      if (files.some((f) => parseRange(f.replace(/\.pbf$/, '')) && f.endsWith('.pbf'))) names.push(e.name);
    } catch {
      // A broken symlink or a file named like a folder is not a font.
    }
  }
  const warnings: string[] = [];
  const files = await scanFontFiles(dir, (w) => warnings.push(w));
  return { dir, names: [...new Set([...names, ...files.keys()])].sort(), files, warnings };
}
