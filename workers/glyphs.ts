// Piscina worker entry of the glyph pool (src/styles/font-files/glyph-pool.ts): one glyph range of a font file
// as an SDF glyphs PBF, off the HTTP process's event loop. Bundled to dist/workers/glyphs.js.
import { runGlyphTask, type GlyphTask } from '../src/styles/font-files/glyph-task.js';

export default function run(task: GlyphTask): Uint8Array {
  return runGlyphTask(task);
}
