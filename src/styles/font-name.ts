// What may name a font: a folder inside the fonts directory, or a font file's declared name. A leaf module, so
// that the font-file scanner and the glyph reader can share it without importing each other.

const MAX_FONT_NAME = 255;

/** Why a font name cannot name a folder inside the fonts directory, or undefined when it can. */
export function fontNameProblem(name: string): string | undefined {
  if (name.length > MAX_FONT_NAME) return `a font name is at most ${MAX_FONT_NAME} characters`;
  if (name === '.' || name === '..') return `"${name}" is not a font name`;
  if (/[/\\]/.test(name)) return `font name "${name}" contains a path separator`;
  // Control characters (NUL above all) have no place in a font name and could confuse the file system.
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'a font name contains a control character';
  if (name.startsWith('.')) return `font name "${name}" starts with "."`;
  return undefined;
}
