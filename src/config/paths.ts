// Paths the configuration implies without naming them.
import os from 'node:os';
import path from 'node:path';
import type { Config } from './schema.js';

/** The scratch and state directory: `[cache] dir`, else a folder in the OS temp dir (reported by /ping). */
export function resolvedCacheDir(state: { readonly config: Pick<Config, 'cache'> }): string {
  return state.config.cache.dir ?? path.join(os.tmpdir(), 'tileserver-ts');
}
