// The work of one glyph range request, wherever it runs (a glyph pool thread, or inline without the built
// worker): open the font (kept per thread, a font file is parsed once) and write the range.
import * as fontkit from 'fontkit';
import { glyphRange } from './glyph-range.js';

export interface GlyphTask {
  file: string;
  postscriptName: string;
  version: string;
  /** The name written into the PBF (the font's served name). */
  name: string;
  start: number;
}

const opened = new Map<string, fontkit.Font>();

function fontOf(task: GlyphTask): fontkit.Font {
  const key = `${task.file}\n${task.postscriptName}\n${task.version}`;
  let font = opened.get(key);
  if (!font) {
    // fontkit's second argument names a variation of a plain font: a collection's font is picked here instead.
    const f = fontkit.openSync(task.file);
    font = 'fonts' in f ? (f.fonts.find((x) => x.postscriptName === task.postscriptName) ?? f.fonts[0]) : f;
    // A handful of fonts per thread at most; a replaced file's old entry goes with the next one.
    if (opened.size >= 32) opened.delete(opened.keys().next().value!);
    opened.set(key, font);
  }
  return font;
}

export function runGlyphTask(task: GlyphTask): Uint8Array {
  return glyphRange(fontOf(task), task.name, task.start);
}
