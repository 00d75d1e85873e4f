// What an upload is called: its id (a random UUID), its source id (`upload-<uuid>`), the kind of file a client
// name announces, and the names the server gives its files. A client's file name is only ever read for its
// extension and echoed back as `file_name`: it never becomes part of a path.
import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { UPLOAD_ID_PREFIX } from '../config/load.js';

/** How an uploaded file is opened: as an MBTiles archive, or through GDAL as a GeoTIFF (served like a COG). */
export type UploadFormat = 'mbtiles' | 'cog';

/** Extensions accepted, lower case, each with how it is opened (spec: .sqlite and .db are MBTiles). */
export const UPLOAD_EXTENSIONS: Readonly<Record<string, UploadFormat>> = {
  mbtiles: 'mbtiles',
  sqlite: 'mbtiles',
  db: 'mbtiles',
  tif: 'cog',
  tiff: 'cog',
};

export const ALLOWED_EXTENSIONS_TEXT = Object.keys(UPLOAD_EXTENSIONS).map((e) => `.${e}`).join(', ');

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const ID_PARAM = new RegExp(`^(?:${UPLOAD_ID_PREFIX})?(${UUID})$`, 'i');

export const newUploadId = (): string => randomUUID();
export const sourceIdOf = (id: string): string => `${UPLOAD_ID_PREFIX}${id}`;

/** The UUID an `{id}` path parameter names (the UUID or `upload-<uuid>`, any case), lower case; undefined otherwise. */
export function parseUploadIdParam(param: string): string | undefined {
  const m = ID_PARAM.exec(param);
  return m ? m[1].toLowerCase() : undefined;
}

/** The extension (lower case, no dot) and format a client file name announces; undefined when it is not one served. */
export function uploadKind(fileName: string): { ext: string; format: UploadFormat } | undefined {
  const dot = fileName.lastIndexOf('.');
  if (dot < 0) return undefined;
  const ext = fileName.slice(dot + 1).toLowerCase();
  // Own property only: "constructor" or "__proto__" are names, not extensions.
  if (!Object.hasOwn(UPLOAD_EXTENSIONS, ext)) return undefined;
  return { ext, format: UPLOAD_EXTENSIONS[ext] };
}

/** Where an accepted upload is kept: `<dir>/upload-<uuid>.<ext>`. */
export const storedPath = (dir: string, id: string, ext: string): string => path.join(dir, `${sourceIdOf(id)}.${ext}`);

/** Where an upload is written while it arrives and is checked, in the same directory so the rename is atomic. */
export const partPath = (dir: string, id: string): string => path.join(dir, `.${sourceIdOf(id)}.part`);

// SQLite's side files (`-journal`, `-wal`, `-shm`) of either name count too: a crash may leave them.
const OWN_NAME = new RegExp(`^(?:${UPLOAD_ID_PREFIX}${UUID}\\.(?:${Object.keys(UPLOAD_EXTENSIONS).join('|')})|\\.${UPLOAD_ID_PREFIX}${UUID}\\.part)(?:-journal|-wal|-shm)?$`);

/** Whether `name` (a directory entry) is one this server writes, stored or partial; nothing else is ever removed. */
export const isOwnFileName = (name: string): boolean => OWN_NAME.test(name);

/** A client file name as it is reported back: control characters out, at most 255 characters. */
export function displayName(fileName: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = fileName.replace(/[\u0000-\u001f\u007f]/g, '');
  return clean.length > 255 ? clean.slice(0, 255) : clean;
}
