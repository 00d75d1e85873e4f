// What the command line serves without --config: archives, folders of archives and remote PMTiles URLs (http(s),
// s3://, gs://, az://, credentials from each provider's standard environment variables) become
// one source each with default settings; or, with nothing given, a config file found in the working directory.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../config/errors.js';
import { validateConfig, type LoadedConfig } from '../config/load.js';
import { isBucketPath, parseLocation } from '../config/object-location.js';
import { AUTO_CONFIG_FILES } from './args.js';

export function findDefaultConfig(cwd: string): string | undefined {
  return AUTO_CONFIG_FILES.map((f) => path.join(cwd, f)).find((f) => existsSync(f));
}

const ARCHIVE_EXTENSIONS = new Set(['.pmtiles', '.mbtiles']);
const isUrl = (arg: string) => /^https?:\/\//i.test(arg);

interface Input {
  /** What the id is made from: the file name, or the last path segment of a URL. */
  name: string;
  type: 'pmtiles' | 'mbtiles';
  path: string;
}

/** A folder's archives, sorted by name so ids and their order do not depend on the file system. */
function folderArchives(dir: string): Input[] {
  const found = readdirSync(dir, { withFileTypes: true })
    .filter((e) => (e.isFile() || e.isSymbolicLink()) && ARCHIVE_EXTENSIONS.has(path.extname(e.name).toLowerCase()))
    .map((e) => e.name)
    .sort();
  if (found.length === 0) throw new ConfigError(`${dir}: the folder holds no .pmtiles or .mbtiles file`);
  return found.map((name) => ({ name, type: path.extname(name).slice(1).toLowerCase() as Input['type'], path: path.resolve(dir, name) }));
}

function classify(arg: string): Input[] {
  if (isBucketPath(arg)) {
    const loc = parseLocation(arg);
    if (typeof loc === 'string') throw new ConfigError(loc);
    return [{ name: loc.key.split('/').pop()!, type: 'pmtiles', path: arg }];
  }
  if (isUrl(arg)) {
    let url: URL;
    try {
      url = new URL(arg);
    } catch {
      throw new ConfigError(`${arg}: not a valid URL`);
    }
    // Remote archives are read with range requests, which only PMTiles supports.
    const last = decodeURIComponent(url.pathname.split('/').filter(Boolean).pop() ?? '') || url.hostname;
    return [{ name: last, type: 'pmtiles', path: arg }];
  }
  let isDir = false;
  try {
    isDir = statSync(arg).isDirectory();
  } catch {
    // A missing archive is reported by the source that fails to open it, with its id.
  }
  if (isDir) return folderArchives(arg);
  const ext = path.extname(arg).toLowerCase();
  if (!ARCHIVE_EXTENSIONS.has(ext)) {
    const exists = existsSync(arg);
    throw new ConfigError(`${arg}: ${exists ? 'not a .pmtiles or .mbtiles file' : 'no such file or folder (expected a .pmtiles or .mbtiles file, a folder, or an http(s), s3://, gs:// or az:// URL)'}`);
  }
  return [{ name: path.basename(arg), type: ext.slice(1) as Input['type'], path: path.resolve(arg) }];
}

/** A source id from a file name: its stem in the id alphabet, made unique with -2, -3... */
function uniqueId(name: string, used: Set<string>): string {
  const stem = name.replace(/\.(pmtiles|mbtiles)$/i, '');
  const base = stem.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^[.-]+/, '') || 'source';
  let id = base;
  for (let n = 2; used.has(id); n++) id = `${base}-${n}`;
  used.add(id);
  return id;
}

/** A config for what was given on the command line: one source per archive, id from its file name. */
export function configFromInputs(inputs: readonly string[]): LoadedConfig {
  const used = new Set<string>();
  const sources = inputs.flatMap(classify).map((input) => ({ id: uniqueId(input.name, used), type: input.type, path: input.path }));
  const raw = { sources };
  const { config, warnings } = validateConfig(raw, '(command line)', process.cwd());
  return { config, hash: createHash('sha256').update(JSON.stringify(raw)).digest('hex'), file: undefined, warnings };
}
