// A data file's fingerprint: what identifies its content on any machine without reading all of it. Down here
// because the cache identities (shared-cache/) and the archive sources (sources/) both take it.
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { createHash } from 'node:crypto';

/** Bytes read from each end of a data file: enough for an archive's header and directories, cheap for any size. */
const SAMPLE = 64 * 1024;

/**
 * A file's identity without reading all of it: its size and its first and last 64 KiB. SQLite bumps a change
 * counter in its header on every write; a PMTiles archive keeps its header and root directory at the start.
 * The file's path and modification time are left out: copies on two machines differ in both.
 */
export function fingerprintFd(fd: number): string {
  const size = fstatSync(fd).size;
  const hash = createHash('sha256').update(`${size}\n`);
  const head = Buffer.alloc(Math.min(SAMPLE, size));
  readSync(fd, head, 0, head.length, 0);
  hash.update(head);
  if (size > SAMPLE) {
    const tail = Buffer.alloc(Math.min(SAMPLE, size - SAMPLE));
    readSync(fd, tail, 0, tail.length, size - tail.length);
    hash.update(tail);
  }
  return hash.digest('hex').slice(0, 32);
}

/** `fingerprintFd` of the file at `file` now; `unreadable:` and the path when it cannot be read. */
export function fileFingerprint(file: string): string {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    return fingerprintFd(fd);
  } catch {
    // Unreadable now: the source itself reports that; the identity just cannot match another machine's.
    return `unreadable:${file}`;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

