// PMTiles v3 archives, local files or http(s) URLs read with range requests, through the `pmtiles` package.
import { open, type FileHandle } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { Compression, FetchSource, PMTiles, SharedPromiseCache, TileType, type Header, type RangeResponse, type Source } from 'pmtiles';
import type { SourceConfig } from '../config/schema.js';
import type { StoredCompression, TileFormat } from '../tiles/format.js';
import { defaultCenter, parseVectorLayers, SourceOpenError, type Bounds, type SourceInfo, type TileSource } from './source.js';

/** Reads byte ranges of a local file; the pmtiles package asks for the header, directories and tiles this way. */
class LocalFileSource implements Source {
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

export class PmtilesSource implements TileSource {
  private constructor(
    readonly info: SourceInfo,
    private readonly archive: PMTiles,
    private readonly handle: FileHandle | undefined,
  ) {}

  static async open(cfg: SourceConfig): Promise<PmtilesSource> {
    const remote = /^https?:\/\//i.test(cfg.path);
    let handle: FileHandle | undefined;
    try {
      let source: Source;
      if (remote) {
        source = new FetchSource(cfg.path);
      } else {
        handle = await open(cfg.path, 'r');
        const { size } = await handle.stat();
        if (size === 0) throw new Error('the file is empty');
        source = new LocalFileSource(handle, cfg.path);
      }
      const archive = new PMTiles(source, new SharedPromiseCache(256, true, decompress), keepStored);
      const header = await archive.getHeader();
      const metadata = await readMetadata(source, header);
      const info = describe(cfg, header, metadata);
      return new PmtilesSource(info, archive, handle);
    } catch (err) {
      await handle?.close().catch(() => {});
      if (err instanceof SourceOpenError) throw err;
      throw new SourceOpenError(cfg.id, `cannot open PMTiles ${cfg.path}: ${reason(err)}`);
    }
  }

  async getTile(z: number, x: number, y: number): Promise<Uint8Array | undefined> {
    const found = await this.archive.getZxy(z, x, y);
    return found ? new Uint8Array(found.data) : undefined;
  }

  async close(): Promise<void> {
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

function describe(cfg: SourceConfig, header: Header, metadata: Record<string, unknown>): SourceInfo {
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
  };
}

