// The file an archive source reads (a local PMTiles or MBTiles file), pinned: a descriptor held open on it from
// the moment the source opened, and the fingerprint of its content then. A file replaced by a rename stays
// readable through the descriptor, so a reload can compare the old archive with the new one; a file overwritten
// in place keeps its inode, and the fingerprint taken at open is all that is left of the old content.
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

export interface ArchiveFile {
  readonly path: string;
  /** A descriptor on the file as it was opened (owned by the source, closed with it). */
  readonly fd: number;
  readonly dev: number;
  readonly ino: number;
  /** Modification time when the source opened (ms). */
  readonly mtimeMs: number;
  /** The content's fingerprint when the source opened. */
  readonly fingerprint: string;
}

/** Pins `fd` (open on `path`): its inode, modification time and the content's fingerprint now. */
export function pinArchive(path: string, fd: number): ArchiveFile {
  const { dev, ino, mtimeMs } = fstatSync(fd);
  return { path, fd, dev, ino, mtimeMs, fingerprint: fingerprintFd(fd) };
}

/**
 * The version of a pinned file on this machine: its fingerprint, inode and modification time. The fingerprint
 * alone misses a rebuilt archive whose change lies in the middle of the file (an SQLite file of the same size
 * and header); a new inode or modification time does not, at the price of a diff that may find nothing.
 */
export function localVersion(a: ArchiveFile): string {
  return `${a.fingerprint}.${a.ino}.${Math.round(a.mtimeMs)}`;
}
