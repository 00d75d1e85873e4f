// The upload directory on disk: leftovers of an earlier run removed at start-up, files removed quietly.
import { readdirSync, rmSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log.js';
import { isOwnFileName } from './names.js';

/**
 * Uploads live only as long as the process (spec), so whatever an earlier run left in `dir` under this server's
 * own names (stored uploads, partial writes) goes. Other files in the directory are never touched. Runs once,
 * in the process that owns the directory (the single process, or the cluster's primary before any worker).
 */
export function removeLeftovers(dir: string | undefined, log: Logger): number {
  if (!dir) return 0;
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch (err) {
    // No directory yet is the normal first start; it is created by the first upload.
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') log.warn({ dir, err: (err as Error).message }, 'uploads: cannot read the upload directory');
    return 0;
  }
  let removed = 0;
  for (const name of names.filter(isOwnFileName)) {
    try {
      rmSync(path.join(dir, name), { force: true });
      removed++;
    } catch (err) {
      log.warn({ file: name, err: (err as Error).message }, 'uploads: cannot remove a leftover upload');
    }
  }
  if (removed) log.info({ dir, removed }, 'uploads: removed files left by an earlier run');
  return removed;
}

/** Removes a file this server wrote; a file already gone is fine. */
export async function removeFile(file: string, log: Logger): Promise<void> {
  try {
    await rm(file, { force: true });
  } catch (err) {
    log.error({ file, err: (err as Error).message }, 'uploads: cannot remove a file');
  }
}
