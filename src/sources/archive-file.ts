// The file an archive source reads (a local PMTiles or MBTiles file), pinned: a descriptor held open on it from
// the moment the source opened, and the fingerprint of its content then. A file replaced by a rename stays
// readable through the descriptor, so a reload can compare the old archive with the new one; a file overwritten
// in place keeps its inode, and the fingerprint taken at open is all that is left of the old content.
import { fstatSync } from 'node:fs';
import { fingerprintFd } from '../config/file-fingerprint.js';

export { fileFingerprint, fingerprintFd } from '../config/file-fingerprint.js';

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
