// Replaced archives as expiries. The cache keys of rendered and transcoded tiles no longer name the content of
// PMTiles and MBTiles archives (shared-cache/identity.ts): when one is replaced, what changed is found by
// comparing the old archive with the new one (pmtiles-diff.ts, mbtiles-diff.ts) and expired like any other
// change, so the tiles of unchanged areas keep their cache entries in every layer.
//
// When the old content can still be read, the changed tiles are expired; when it cannot, the whole source:
// - a reload (admin, SIGHUP, the file watch): the old state's source still holds the old file open while the
//   new state is built. A file replaced by a rename is diffed through that descriptor; a file overwritten in
//   place (same inode) has no old content left to read.
// - a remote PMTiles object with a new ETag: diffed when the old object can still be read at its ETag (a store
//   that keeps it), else the whole source.
// - a start after an archive was replaced while the server was down: the version last served (a local file's
//   fingerprint, inode and modification time; a remote object's ETag) is kept in
//   `<cache dir>/expire/archives.json`; a different one expires the whole source.
// Every process of a cluster (and machine of a fleet) finds the same change on its own: a batch's id names the
// source, both versions and the tiles found, so that the hubs apply it once.
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { resolvedCacheDir } from '../config/paths.js';
import type { Logger } from '../log.js';
import { fingerprintFd, localVersion } from '../sources/archive-file.js';
import { createHash } from 'node:crypto';
import { MbtilesSource } from '../sources/mbtiles.js';
import { PmtilesSource, type ArchiveVersion } from '../sources/pmtiles.js';
import type { TileSource } from '../sources/source.js';
import type { AppState } from '../state/app-state.js';
import { ALL_ZOOMS, unique } from './area-times.js';
import { tileKey, validTile } from './tile-key.js';
import { expiryHub, type NewBatch } from './hub.js';
import { diffMbtiles } from './mbtiles-diff.js';
import { diffPmtiles, type ArchiveDiff } from './pmtiles-diff.js';

/** Changed tiles beyond which one archive's change expires the whole source (about 32 MB while found). */
export const ARCHIVE_DIFF_MAX_TILES = 4_000_000;

/** Where each source's served version is kept between runs. */
export function archivesFile(state: Pick<AppState, 'config'>): string {
  return path.join(resolvedCacheDir(state), 'expire', 'archives.json');
}

/** What identifies the content a followed source serves: a local file's version, a remote object's ETag. */
function versionOf(source: TileSource): string | undefined {
  if (source.archive) return localVersion(source.archive);
  if (source instanceof PmtilesSource) return source.info.revision;
  return undefined;
}

/** The configured sources whose replacement becomes an expiry: local PMTiles and MBTiles, remote PMTiles. */
export function followsArchive(source: TileSource): boolean {
  return source.archive !== undefined || source instanceof PmtilesSource;
}

const WHOLE = () => Float64Array.of(0);

/**
 * One source's batch. Its id names the two versions and the tiles: every process of a machine (and every machine
 * of a fleet) that compares the same two archives finds the same tiles and gives the same id, so the batch is
 * applied once; machines that served another old version find other tiles, and their batches count too.
 */
function batch(sourceId: string, before: string, after: string, tiles: Float64Array): NewBatch {
  const digest = createHash('sha256').update(new Uint8Array(tiles.buffer, tiles.byteOffset, tiles.byteLength)).digest('hex').slice(0, 16);
  return { id: `archive:${sourceId}:${before}:${after}:${digest}`, sources: [sourceId], tiles, band: ALL_ZOOMS, input: 'archive', lines: tiles.length };
}

/** The expiry of one local archive replaced between two states. */
async function localChange(id: string, before: TileSource, after: TileSource, log: Logger): Promise<NewBatch | undefined> {
  const a = before.archive!;
  const b = after.archive!;
  if (localVersion(a) === localVersion(b)) return undefined;
  const whole = (reason: string) => {
    log.info({ source: id, reason }, 'archive replaced: the old content cannot be compared; expiring the whole source');
    return batch(id, a.fingerprint, b.fingerprint, WHOLE());
  };
  if (a.dev === b.dev && a.ino === b.ino) {
    const patched = before instanceof MbtilesSource && after instanceof MbtilesSource ? patchedInPlace(before, after) : undefined;
    if (patched?.length === 0) return undefined;
    if (patched) {
      log.info({ source: id, tiles: patched.length }, 'archive patched in place: expiring the tiles the patch holds');
      return batch(id, a.fingerprint, b.fingerprint, patched);
    }
    return whole('the file was overwritten in place');
  }
  let now: string;
  try {
    now = fingerprintFd(a.fd);
  } catch {
    return whole('the old file cannot be read');
  }
  if (now !== a.fingerprint) return whole('the old file was changed in place');
  let diff: ArchiveDiff;
  try {
    if (before instanceof PmtilesSource && after instanceof PmtilesSource) diff = await diffPmtiles(before.reader, after.reader, { maxTiles: ARCHIVE_DIFF_MAX_TILES });
    // The old archive through the old source's connection: its path names the new file now.
    else if (before instanceof MbtilesSource && after instanceof MbtilesSource) diff = await diffMbtiles(before, after, { maxTiles: ARCHIVE_DIFF_MAX_TILES });
    else return whole('the archive changed its kind');
  } catch (err) {
    return whole(`the diff failed: ${(err as Error).message}`);
  }
  // A file touched or copied again with the same content: nothing to expire.
  if (diff.kind === 'tiles' && diff.tiles.length === 0) return undefined;
  return diffed(id, a.fingerprint, b.fingerprint, diff, log);
}

/**
 * The tiles of a patch `tileserver-ts mbtiles apply-patch` applied in place to the file `before` served: the
 * file records the patch's positions with its agg_tiles_hash before and after (sources/mbtiles-patch-record.ts PATCH_TABLE);
 * they count when `before` opened the file at that hash and the file still stores the hash the patch left.
 */
function patchedInPlace(before: MbtilesSource, after: MbtilesSource): Float64Array | undefined {
  if (before.aggTilesHash === undefined) return undefined;
  const rows = after.patchedFrom(before.aggTilesHash, ARCHIVE_DIFF_MAX_TILES);
  if (!rows) return undefined;
  const keys: number[] = [];
  for (const [z, x, row] of rows) {
    const y = 2 ** z - 1 - row;
    if (validTile(z, x, y)) keys.push(tileKey(z, x, y));
  }
  return unique(Float64Array.from(keys).sort());
}

function diffed(id: string, before: string, after: string, diff: ArchiveDiff, log: Logger): NewBatch {
  if (diff.kind === 'whole') {
    log.info({ source: id, reason: diff.reason }, 'archive replaced: expiring the whole source');
    return batch(id, before, after, WHOLE());
  }
  log.info({ source: id, tiles: diff.tiles.length, bytes_compared: diff.read }, 'archive replaced: expiring the tiles that changed');
  return batch(id, before, after, diff.tiles);
}

/** The expiry of a remote archive whose object changed: diffed if its old object can still be read. */
export async function remoteChange(id: string, before: ArchiveVersion, after: ArchiveVersion, log: Logger): Promise<NewBatch> {
  const from = before.revision ?? 'unknown';
  const to = after.revision ?? 'unknown';
  try {
    return diffed(id, from, to, await diffPmtiles(before.reader, after.reader, { maxTiles: ARCHIVE_DIFF_MAX_TILES }), log);
  } catch (err) {
    log.info({ source: id, reason: (err as Error).message }, 'remote archive replaced: the old object cannot be read; expiring the whole source');
    return batch(id, from, to, WHOLE());
  }
}

/**
 * The expiries of the archives `next` serves in place of `old`'s (run while `old` still serves and holds its
 * files open). Hand them to the hub when `next` takes over.
 */
export async function archiveChanges(old: AppState, next: AppState, log: Logger): Promise<NewBatch[]> {
  const out: NewBatch[] = [];
  for (const cfg of next.config.sources) {
    const before = old.sources.get(cfg.id);
    const after = next.sources.get(cfg.id);
    if (!before || !after || !followsArchive(before) || !followsArchive(after)) continue;
    if (before.archive && after.archive) {
      const b = await localChange(cfg.id, before, after, log);
      if (b) out.push(b);
    } else if (before instanceof PmtilesSource && after instanceof PmtilesSource && !before.archive && !after.archive) {
      if (before.info.revision !== after.info.revision) out.push(await remoteChange(cfg.id, { reader: before.reader, revision: before.info.revision }, { reader: after.reader, revision: after.info.revision }, log));
    } else {
      const from = versionOf(before);
      const to = versionOf(after);
      if (from !== to) out.push(batch(cfg.id, from ?? 'none', to ?? 'none', WHOLE()));
    }
  }
  return out;
}

/** Remote archives of `state` re-opened on a new ETag between reloads: each change is expired when found. */
export function followRemoteArchives(state: AppState, log: Logger, accepted: () => Promise<void>): void {
  for (const cfg of state.config.sources) {
    const source = state.sources.get(cfg.id);
    if (!(source instanceof PmtilesSource) || source.archive) continue;
    source.onReplaced((before, after) => {
      void remoteChange(cfg.id, before, after, log)
        .then((b) => expiryHub().accept(b))
        .then(accepted)
        .catch((err: Error) => log.error({ source: cfg.id, err: err.message }, 'remote archive replaced: the expiry could not be accepted'));
    });
  }
}

interface Recorded {
  sources: Record<string, string>;
}

async function readRecorded(file: string, log: Logger): Promise<Recorded | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const parsed = JSON.parse(text) as Recorded;
    if (parsed && typeof parsed.sources === 'object' && parsed.sources !== null) return parsed;
  } catch {
    // Written by rename: a broken file was not written by this server.
  }
  log.warn({ file }, 'archives: the record of served archives is not readable; ignored');
  return undefined;
}

/**
 * The expiries of archives replaced while the server was down: every followed source whose version differs
 * from the one last served (as `recordArchives` kept it) is expired whole; its old content is gone.
 */
export async function archivesChangedWhileDown(state: AppState, log: Logger): Promise<NewBatch[]> {
  const recorded = await readRecorded(archivesFile(state), log);
  if (!recorded) return [];
  const out: NewBatch[] = [];
  for (const cfg of state.config.sources) {
    const source = state.sources.get(cfg.id);
    const was = recorded.sources[cfg.id];
    const now = source && followsArchive(source) ? versionOf(source) : undefined;
    if (was === undefined || now === undefined || was === now) continue;
    log.info({ source: cfg.id }, 'archive replaced while the server was down: expiring the whole source');
    out.push(batch(cfg.id, was, now, WHOLE()));
  }
  return out;
}

/** Keeps the version each followed source of `state` serves (atomically: a rename over the previous record). */
export async function recordArchives(state: AppState): Promise<void> {
  const sources: Record<string, string> = {};
  for (const cfg of state.config.sources) {
    const source = state.sources.get(cfg.id);
    const v = source && followsArchive(source) ? versionOf(source) : undefined;
    if (v !== undefined) sources[cfg.id] = v;
  }
  const file = archivesFile(state);
  await mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, JSON.stringify({ sources } satisfies Recorded));
  await rename(tmp, file);
}
