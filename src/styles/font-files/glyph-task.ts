// The work of one glyph range request, wherever it runs (a glyph pool thread, or inline without the built
// worker): open the font (kept per thread, a font file is parsed and registered with the canvas once) and
// write the range.
import { readFileSync } from 'node:fs';
import { GlobalFonts, type FontKey } from '@napi-rs/canvas';
import * as fontkit from 'fontkit';
import { collectionFace, isCollection } from './collection-face.js';
import { GlyphDrawer } from './glyph-range.js';

export interface GlyphTask {
  file: string;
  postscriptName: string;
  version: string;
  /** The name written into the PBF (the font's served name). */
  name: string;
  start: number;
}

interface OpenFont {
  drawer: GlyphDrawer;
  /** Set when this thread registered the font with the canvas (and so removes it again). */
  key: FontKey | undefined;
}

const opened = new Map<string, OpenFont>();

function open(task: GlyphTask): OpenFont {
  const bytes = readFileSync(task.file);
  // fontkit's second argument names a variation of a plain font: a collection's font is picked here instead.
  const f = fontkit.create(bytes);
  const index = 'fonts' in f ? Math.max(0, f.fonts.findIndex((x) => x.postscriptName === task.postscriptName)) : 0;
  const font = 'fonts' in f ? f.fonts[index] : f;
  // Each font gets a family of its own with the canvas, named for the file's content and its place in the file:
  // two files declaring the same family, or a replaced file, never draw each other's glyphs.
  const family = `tsts-glyphs-${task.version}-${index}`;
  // The canvas's fonts belong to the process, not the thread: a glyph thread started again after an idle spell
  // finds the fonts its predecessor registered, the same bytes under the same family.
  let key: FontKey | undefined;
  if (!GlobalFonts.has(family)) {
    key = GlobalFonts.register(isCollection(bytes) ? collectionFace(bytes, index) : bytes, family) ?? undefined;
    if (!key) throw new Error(`the canvas could not load the font ${task.postscriptName} of ${task.file}`);
  }
  return { drawer: new GlyphDrawer(font, family), key };
}

function fontOf(task: GlyphTask): GlyphDrawer {
  const id = `${task.file}\n${task.postscriptName}\n${task.version}`;
  let font = opened.get(id);
  if (!font) {
    font = open(task);
    // A handful of fonts per thread at most; a replaced file's old entry goes with the next one, and leaves the
    // canvas's fonts too.
    if (opened.size >= 32) {
      const [oldest, entry] = opened.entries().next().value!;
      opened.delete(oldest);
      if (entry.key) GlobalFonts.remove(entry.key);
    }
    opened.set(id, font);
  }
  return font.drawer;
}

export function runGlyphTask(task: GlyphTask): Uint8Array {
  return fontOf(task).range(task.name, task.start);
}
