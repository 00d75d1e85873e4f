// PMTiles v3 archives through the `pmtiles` package: local files, or remote objects (s3://, gs://, az://,
// http(s)) read with range requests by the shared reader of src/sources/object-store/. A remote archive is read
// in generations: each pins the object's ETag, so when the object is replaced the next read fails as 'changed'
// and the archive is re-opened as a whole (header, metadata, directories, SourceInfo) before any tile of the new
// object is served; the old header is never served with the new tiles.
import { open, type FileHandle } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { Compression, PMTiles, SharedPromiseCache, TileType, type Cache, type Entry, type Header, type RangeResponse, type Source } from 'pmtiles';
import { isRemotePath } from '../config/object-location.js';
import type { PmtilesSourceConfig, StorageConfig } from '../config/schema.js';
import { log } from '../log.js';
import { imageWidth, type StoredCompression, type TileFormat } from '../tiles/format.js';
import { lonLatToTile } from '../tiles/coords.js';
import { openChannel } from './object-store/open.js';
import { PinnedSource, RETRY_AFTER_STORAGE, type StorageChannel } from './object-store/reader.js';
import { StoreError } from './object-store/store.js';
import { demOf } from './dem-info.js';
import { pinArchive, type ArchiveFile } from './archive-file.js';
import { defaultCenter, parseVectorLayers, SourceOpenError, TileUnavailableError, type Bounds, type SourceInfo, type TileSource } from './source.js';

/** Reads byte ranges of a local file; the pmtiles package asks for the header, directories and tiles this way. */
export class LocalFileSource implements Source {
  constructor(
    private readonly handle: FileHandle,
    private readonly key: string,
  ) {}
  getKey() {
    return this.key;
  }
  async getBytes(offset: number, length: number): Promise<RangeResponse> {
    const buf = Buffer.allocUnsafe(length);
    const { bytesRead } = await this.handle.read(buf, 0, length, offset);
    return { data: buf.buffer.slice(buf.byteOffset, buf.byteOffset + bytesRead) as ArrayBuffer };
  }
}

function decompress(buf: ArrayBuffer, compression: Compression): Promise<ArrayBuffer> {
  if (compression === Compression.None || compression === Compression.Unknown) return Promise.resolve(buf);
  if (compression === Compression.Gzip) {
    const out = gunzipSync(new Uint8Array(buf));
    return Promise.resolve(out.buffer.slice(out.byteOffset, out.byteOffset + out.byteLength) as ArrayBuffer);
  }
  return Promise.reject(new Error(`unsupported PMTiles compression ${Compression[compression]}`));
}

/** Tile data stays as stored: a gzip tile is passed through to clients that accept gzip, not inflated and re-deflated. */
const keepStored = (buf: ArrayBuffer) => Promise.resolve(buf);

const TILE_TYPES: Partial<Record<TileType, TileFormat>> = {
  [TileType.Mvt]: 'pbf',
  [TileType.Png]: 'png',
  [TileType.Jpeg]: 'jpg',
  [TileType.Webp]: 'webp',
  [TileType.Mlt]: 'mlt',
};

/**
 * The package's shared directory cache, less its one habit that hurts a server: a failed read stays cached as
 * a rejected promise, so a directory that could not be read during a storage outage would fail forever. Failed
 * entries are dropped here (the keys are the package's own: `key|etag|offset|length` and the source key).
 */
class ArchiveCache implements Cache {
  private readonly inner = new SharedPromiseCache(256, true, decompress);

  async getHeader(source: Source): Promise<Header> {
    try {
      return await this.inner.getHeader(source);
    } catch (err) {
      this.inner.cache.delete(source.getKey());
      throw err;
    }
  }

  async getDirectory(source: Source, offset: number, length: number, header: Header, signal?: AbortSignal): Promise<Entry[]> {
    try {
      return await this.inner.getDirectory(source, offset, length, header, signal);
    } catch (err) {
      this.inner.cache.delete(`${source.getKey()}|${header.etag || ''}|${offset}|${length}`);
      throw err;
    }
  }

  invalidate(source: Source): Promise<void> {
    return this.inner.invalidate(source);
  }
}

/** A remote archive's object as one generation read it: its reader (pinned to the ETag) and the ETag. */
export interface ArchiveVersion {
  reader: Source;
  revision: string | undefined;
}

/** One opened state of an archive: what was read from it and the reader pinned to it. */
interface Generation {
  readonly archive: PMTiles;
  readonly info: SourceInfo;
}

async function openGeneration(cfg: PmtilesSourceConfig, source: Source, revision: () => string | undefined): Promise<Generation> {
  const archive = new PMTiles(source, new ArchiveCache(), keepStored);
  const header = await archive.getHeader();
  const metadata = await readMetadata(source, header);
  const info = describe(cfg, header, metadata, revision());
  return { archive, info: cfg.dem ? { ...info, tileSize: await demTileSize(archive, info) } : info };
}

/**
 * The tile size of an archive of elevation tiles, read from the header of a tile under its centre (clients and
 * the terrain products need it to place the pixels); its TileJSON `tileSize`, else 256, when no such tile is there.
 */
async function demTileSize(archive: PMTiles, info: SourceInfo): Promise<number> {
  const [lon, lat] = info.center;
  for (const z of [info.center[2], info.minzoom, info.maxzoom]) {
    const { x, y } = lonLatToTile(lon, lat, z);
    const tile = await archive.getZxy(z, x, y);
    const width = tile && imageWidth(new Uint8Array(tile.data));
    if (width) return width;
  }
  return 256;
}

/** A storage failure during a tile read: 503 with Retry-After for this source only. */
function unavailable(cfg: PmtilesSourceConfig, err: StoreError): TileUnavailableError {
  return new TileUnavailableError(503, 'Storage unavailable', `source "${cfg.id}": cannot read ${cfg.path}: ${err.reason}`, RETRY_AFTER_STORAGE);
}

export class PmtilesSource implements TileSource {
  private renewing: Promise<Generation> | undefined;
  private generations = 0;

  private constructor(
    private readonly cfg: PmtilesSourceConfig,
    private current: Generation,
    private readonly handle: FileHandle | undefined,
    private readonly channel: StorageChannel | undefined,
    readonly archive?: ArchiveFile,
  ) {
    if (channel) {
      this.storageProblem = () => (channel.reachable ? undefined : channel.problem || 'no answer');
      this.refresh = () => this.revalidate(channel);
    }
  }

  private async revalidate(channel: StorageChannel): Promise<void> {
    const seen = this.current;
    try {
      const { etag } = await channel.read(0, 1, undefined);
      // A store without ETags cannot say whether the object changed: read it again to be sure.
      if (etag === undefined || etag !== seen.info.revision) await this.renew(seen);
    } catch (err) {
      if (err instanceof SourceOpenError) throw err;
      throw new SourceOpenError(this.cfg.id, `cannot re-open PMTiles ${this.cfg.path}: ${err instanceof StoreError ? err.reason : reason(err)}`);
    }
  }

  get info(): SourceInfo {
    return this.current.info;
  }

  private readonly replacedListeners: ((before: ArchiveVersion, after: ArchiveVersion) => void)[] = [];

  /** Calls `fn` each time a replaced remote object is re-opened (the expiries of the change follow it). */
  onReplaced(fn: (before: ArchiveVersion, after: ArchiveVersion) => void): void {
    this.replacedListeners.push(fn);
  }

  /** The byte reader of the archive served now (pinned to its ETag when remote): what a diff reads. */
  get reader(): Source {
    return this.current.archive.source;
  }

  static async open(cfg: PmtilesSourceConfig, storage: StorageConfig): Promise<PmtilesSource> {
    if (isRemotePath(cfg.path)) return PmtilesSource.openRemote(cfg, storage);
    let handle: FileHandle | undefined;
    try {
      handle = await open(cfg.path, 'r');
      const { size } = await handle.stat();
      if (size === 0) throw new Error('the file is empty');
      const archive = pinArchive(cfg.path, handle.fd);
      const gen = await openGeneration(cfg, new LocalFileSource(handle, cfg.path), () => undefined);
      return new PmtilesSource(cfg, gen, handle, undefined, archive);
    } catch (err) {
      await handle?.close().catch(() => {});
      if (err instanceof SourceOpenError) throw err;
      throw new SourceOpenError(cfg.id, `cannot open PMTiles ${cfg.path}: ${reason(err)}`);
    }
  }

  private static async openRemote(cfg: PmtilesSourceConfig, storage: StorageConfig): Promise<PmtilesSource> {
    let channel: StorageChannel | undefined;
    try {
      channel = await openChannel(cfg, storage);
      const gen = await PmtilesSource.remoteGeneration(cfg, channel, 0);
      channel.activate();
      return new PmtilesSource(cfg, gen, undefined, channel);
    } catch (err) {
      channel?.close();
      if (err instanceof SourceOpenError) throw err;
      throw new SourceOpenError(cfg.id, `cannot open PMTiles ${cfg.path}: ${err instanceof StoreError ? err.reason : reason(err)}`);
    }
  }

  /** A generation of a remote archive; an object replaced while its header and metadata are read is read again. */
  private static async remoteGeneration(cfg: PmtilesSourceConfig, channel: StorageChannel, n: number): Promise<Generation> {
    for (let attempt = 0; ; attempt++) {
      const source = new PinnedSource(channel, `${cfg.path}#${n}.${attempt}`);
      try {
        return await openGeneration(cfg, source, () => source.pinnedEtag);
      } catch (err) {
        if (!(err instanceof StoreError && err.kind === 'changed' && attempt < 2)) throw err;
      }
    }
  }

  /** Re-opens a replaced remote archive once, however many reads noticed the change at the same time. */
  private renew(seen: Generation): Promise<Generation> {
    if (this.current !== seen) return Promise.resolve(this.current);
    if (!this.renewing) {
      const channel = this.channel!;
      this.renewing = PmtilesSource.remoteGeneration(this.cfg, channel, ++this.generations).then(
        (next) => {
          log.info(`source "${this.cfg.id}": ${this.cfg.path} was replaced (ETag ${seen.info.revision ?? '?'} -> ${next.info.revision ?? '?'}); re-opened`);
          this.current = next;
          for (const fn of this.replacedListeners) fn({ reader: seen.archive.source, revision: seen.info.revision }, { reader: next.archive.source, revision: next.info.revision });
          return next;
        },
        (err: unknown) => {
          // The new object is not an archive this server can serve (or could not be read): the old generation
          // stays current, and its reads go on failing as 'changed' (503) until the object is fixed or reloaded.
          if (err instanceof StoreError || err instanceof SourceOpenError) throw err;
          throw new SourceOpenError(this.cfg.id, `cannot re-open PMTiles ${this.cfg.path}: ${reason(err)}`);
        },
      );
      this.renewing = this.renewing.finally(() => {
        this.renewing = undefined;
      });
    }
    return this.renewing;
  }

  async getTile(z: number, x: number, y: number): Promise<Uint8Array | undefined> {
    let gen = this.current;
    for (let attempt = 0; ; attempt++) {
      try {
        const found = await gen.archive.getZxy(z, x, y);
        return found ? new Uint8Array(found.data) : undefined;
      } catch (err) {
        if (!(err instanceof StoreError)) {
          if (err instanceof SourceOpenError) throw new TileUnavailableError(503, 'Storage unavailable', err.message, RETRY_AFTER_STORAGE);
          throw err;
        }
        if (err.kind !== 'changed' || attempt > 0) throw unavailable(this.cfg, err);
        try {
          gen = await this.renew(gen);
        } catch (reopen) {
          if (reopen instanceof StoreError) throw unavailable(this.cfg, reopen);
          if (reopen instanceof SourceOpenError) throw new TileUnavailableError(503, 'Storage unavailable', reopen.message, RETRY_AFTER_STORAGE);
          throw reopen;
        }
      }
    }
  }

  /** Set for remote archives only: a local file has no store whose health readiness should name. */
  readonly storageProblem?: () => string | undefined;
  /** Set for remote archives only: compares the object's ETag with the open generation's, and re-opens on a change. */
  readonly refresh?: () => Promise<void>;

  async close(): Promise<void> {
    this.channel?.close();
    await this.handle?.close();
  }
}

function reason(err: unknown): string {
  const msg = err instanceof Error ? err.message : String(err);
  if (/ENOENT/.test(msg)) return 'no such file';
  if (/Wrong magic number/.test(msg)) return 'not a PMTiles archive (wrong magic number)';
  if (/spec version/.test(msg)) return `unsupported PMTiles version (${msg})`;
  return msg;
}

/** The JSON metadata block, read directly: the package's own reader would also apply our tile pass-through. */
async function readMetadata(source: Source, header: Header): Promise<Record<string, unknown>> {
  if (header.jsonMetadataLength === 0) return {};
  const { data } = await source.getBytes(header.jsonMetadataOffset, header.jsonMetadataLength, undefined, header.etag);
  const text = new TextDecoder().decode(await decompress(data, header.internalCompression));
  const parsed: unknown = JSON.parse(text);
  return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
}

function describe(cfg: PmtilesSourceConfig, header: Header, metadata: Record<string, unknown>, revision: string | undefined): SourceInfo {
  const format = TILE_TYPES[header.tileType as TileType];
  if (!format) throw new SourceOpenError(cfg.id, `PMTiles tile type ${header.tileType} (${TileType[header.tileType] ?? 'unknown'}) is not a format this server serves`);
  let compression: StoredCompression;
  if (header.tileCompression === Compression.Gzip) compression = 'gzip';
  else if (header.tileCompression === Compression.None || header.tileCompression === Compression.Unknown) compression = 'none';
  else throw new SourceOpenError(cfg.id, `PMTiles tile compression ${Compression[header.tileCompression]} is not supported (gzip or none)`);
  // The header is the truth for zoom range and bounds (decisions.md); the config may narrow the zoom range.
  const minzoom = Math.max(header.minZoom, cfg.minzoom ?? 0);
  const maxzoom = Math.min(header.maxZoom, cfg.maxzoom ?? 22);
  const valid = header.minLon < header.maxLon && header.minLat < header.maxLat;
  const bounds: Bounds = valid ? [header.minLon, header.minLat, header.maxLon, header.maxLat] : [-180, -85.0511287798066, 180, 85.0511287798066];
  const center: [number, number, number] =
    header.centerLon !== 0 || header.centerLat !== 0 || header.centerZoom !== 0
      ? [header.centerLon, header.centerLat, Math.min(maxzoom, Math.max(minzoom, header.centerZoom))]
      : defaultCenter(bounds, minzoom, maxzoom);
  const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
  return {
    id: cfg.id,
    type: 'pmtiles',
    format,
    compression,
    name: cfg.name ?? str(metadata.name) ?? cfg.id,
    attribution: cfg.attribution ?? str(metadata.attribution),
    description: cfg.description ?? str(metadata.description),
    minzoom,
    maxzoom,
    bounds,
    center,
    vectorLayers: format === 'pbf' || format === 'mlt' ? parseVectorLayers(metadata.vector_layers) ?? [] : undefined,
    ...demOf(cfg, format),
    ...(revision !== undefined ? { revision } : {}),
  };
}

