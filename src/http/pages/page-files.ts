// The pages' own static files (src/http/pages/client/: plain browser modules and one style sheet, served as
// they are: no build step). The build copies them to dist/client/; from source they are read in place.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// A Map, not an object literal: the name comes from the URL, and `valueOf` or `constructor` must find nothing.
const TYPES = new Map<string, string>([
  ['common.js', 'text/javascript; charset=utf-8'],
  ['embed.js', 'text/javascript; charset=utf-8'],
  ['home.js', 'text/javascript; charset=utf-8'],
  ['viewer.js', 'text/javascript; charset=utf-8'],
  ['data.js', 'text/javascript; charset=utf-8'],
  ['pages.css', 'text/css; charset=utf-8'],
]);
export const PAGE_FILES = [...TYPES.keys()];

/** dist/cli.js finds dist/client/ (copied by scripts/build.mjs); src/http/pages/page-files.ts finds its folder. */
function clientDir(): string {
  const candidates = [new URL('./client/', import.meta.url), new URL('../src/http/pages/client/', import.meta.url)];
  for (const c of candidates) {
    const dir = fileURLToPath(c);
    if (existsSync(`${dir}embed.js`)) return dir;
  }
  throw new Error(`the page scripts are missing (looked in ${candidates.map((c) => fileURLToPath(c)).join(', ')})`);
}

const cache = new Map<string, { bytes: Buffer; type: string }>();

export function pageFile(name: string): { bytes: Buffer; type: string } | undefined {
  const type = TYPES.get(name);
  if (!type) return undefined;
  let f = cache.get(name);
  if (!f) {
    f = { bytes: readFileSync(`${clientDir()}${name}`), type };
    cache.set(name, f);
  }
  return f;
}
