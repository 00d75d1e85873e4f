// What `server.watch` looks at: the local files and folders a configuration reads its content from (archives,
// style files and the sprite files beside them, SVG sprite folders, the fonts directory). A file is watched
// through its folder: a file replaced by a rename (how editors and `cp` over a temp name save) is a new inode
// that a watch on the old file would never see.
import path from 'node:path';
import { isRemotePath } from './object-location.js';
import type { Config } from './schema.js';

/** One folder to watch and which names in it matter. */
export interface WatchTarget {
  dir: string;
  /** File names directly in `dir` that matter, or undefined for every file of the tree under it. */
  names: Set<string> | undefined;
  /** A style's folder: sprite sheets (`*.png`, `*.json`) beside it matter too. */
  sprites: boolean;
}

/** The folders to watch for a configuration, merged so that each folder is watched once. */
export function watchTargets(config: Config): WatchTarget[] {
  const byDir = new Map<string, WatchTarget>();
  const file = (p: string, sprites = false) => {
    const dir = path.dirname(p);
    const t = byDir.get(dir) ?? { dir, names: new Set<string>(), sprites: false };
    t.names?.add(path.basename(p));
    t.sprites ||= sprites;
    byDir.set(dir, t);
  };
  const tree = (dir: string) => byDir.set(dir, { dir, names: undefined, sprites: false });
  for (const s of config.sources) {
    if (!isRemotePath(s.path)) file(s.path);
  }
  for (const s of config.styles) file(s.path, true);
  // A tree replaces a folder's file list: it covers every file in it anyway.
  for (const s of config.styles) if (s.sprite_dir) tree(s.sprite_dir);
  if (config.fonts) tree(config.fonts);
  // Keys and key sets apply on reload (docs/access.md): a watched server applies an edited keys file at once.
  if (config.auth?.keys_file) file(config.auth.keys_file);
  if (config.auth?.jwt?.jwks_file) file(config.auth.jwt.jwks_file);
  return [...byDir.values()];
}

/**
 * Names that are a file on its way somewhere, never content: partial downloads and copies (`x.ttf.part`), vim's
 * swap files (`x.svg.swp`, `.swo`, `.swx`) and backup copies (`x.json~`). They would start a reload of nothing.
 */
const TRANSIENT = /(\.part|\.sw[opx]|~)$/i;

/** True when a change to `name` (a path relative to the target's folder) is one the service reads. */
export function matters(target: WatchTarget, name: string): boolean {
  // Hidden files are editors' swap and lock files, never content.
  if (name.split(path.sep).some((part) => part.startsWith('.'))) return false;
  // A file the configuration names is content whatever it is called.
  if (target.names?.has(name)) return true;
  if (TRANSIENT.test(name)) return false;
  if (!target.names) return true;
  return target.sprites && /\.(png|json)$/.test(name);
}
