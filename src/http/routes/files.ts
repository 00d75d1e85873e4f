// /files/{path}: files from the configured directory. Anything that would resolve outside it is a 404
// (decisions.md), including `..` in any spelling, absolute paths and symlinks that point out.
import { createReadStream } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import * as v from 'valibot';
import type { ServerContext } from '../context.js';
import { problem } from '../problem.js';
import type { Router } from '../router.js';
import { PUBLIC } from '../../routes/public-routes.js';

// A Map: the extension comes from the URL (`x.constructor` must be octet-stream, not a lookup of a function).
const TYPES = new Map<string, string>([
  ['.json', 'application/json; charset=utf-8'],
  ['.geojson', 'application/geo+json'],
  ['.html', 'text/html; charset=utf-8'],
  ['.txt', 'text/plain; charset=utf-8'],
  ['.css', 'text/css; charset=utf-8'],
  ['.js', 'text/javascript; charset=utf-8'],
  ['.svg', 'image/svg+xml'],
  ['.png', 'image/png'],
  ['.jpg', 'image/jpeg'],
  ['.jpeg', 'image/jpeg'],
  ['.webp', 'image/webp'],
  ['.pbf', 'application/x-protobuf'],
  ['.mvt', 'application/vnd.mapbox-vector-tile'],
  ['.pmtiles', 'application/vnd.pmtiles'],
  ['.csv', 'text/csv; charset=utf-8'],
  ['.xml', 'application/xml'],
]);

export const contentTypeFor = (file: string) => TYPES.get(path.extname(file).toLowerCase()) ?? 'application/octet-stream';

/**
 * Resolves a URL sub-path inside `root`; undefined when it is not a regular file inside it.
 * The check is done on real paths so a symlink inside the directory cannot lead out of it.
 */
export async function resolveInside(root: string, urlPath: string): Promise<string | undefined> {
  let rel: string;
  try {
    rel = decodeURIComponent(urlPath);
  } catch {
    return undefined;
  }
  if (rel.includes('\0') || rel.split(/[\\/]/).includes('..') || path.isAbsolute(rel)) return undefined;
  try {
    const realRoot = await realpath(root);
    const real = await realpath(path.join(realRoot, rel));
    if (real !== realRoot && !real.startsWith(realRoot + path.sep)) return undefined;
    const s = await stat(real);
    return s.isFile() ? real : undefined;
  } catch {
    return undefined;
  }
}

export function registerFileRoutes(r: Router, ctx: ServerContext): void {
  r.add(
    PUBLIC.files,
    {
      summary: 'A file from the configured files directory',
      tag: 'Files',
      params: { filepath: { schema: v.string(), description: 'path inside the files directory' } },
      responses: {
        200: { description: 'the file', headers: { 'Cache-Control': 'public, max-age=3600' } },
        404: { description: 'no such file, a directory, or a path leaving the directory', content: { 'application/problem+json': true } },
      },
    },
    async (c) => {
      const root = ctx.holder.current.config.files;
      const sub = c.req.path.slice('/files/'.length);
      const file = root ? await resolveInside(root, sub) : undefined;
      if (!file) return problem(c, 404, 'File not found', root ? `no file "${sub}"` : 'no files directory is configured');
      const { size } = await stat(file);
      const body = Readable.toWeb(createReadStream(file)) as ReadableStream;
      return c.body(body, 200, { 'Content-Type': contentTypeFor(file), 'Content-Length': String(size), 'Cache-Control': 'public, max-age=3600' });
    },
  );
}
