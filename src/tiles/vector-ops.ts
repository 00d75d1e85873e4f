// The CPU-heavy vector operations, as plain messages in and out so that they run the same inline or in a
// transcode pool thread (workers/transcode.ts): transcoding, composite merging, GeoJSON, feature queries.
// Input bytes may be gzip-compressed; outputs are uncompressed (content encoding is the caller's business).
import { gunzipSync } from 'node:zlib';
import { encode, type CompressionLevels, type ContentEncoding } from './encoding.js';
import { queryTiles, type BBox, type QueryResult } from './query-tiles.js';
import { tileToGeoJson } from './geojson.js';
import { mergeTiles } from './merge.js';
import { decodeMlt, encodeMlt } from './mlt-codec.js';
import { decodeMvt } from './mvt-decode.js';
import { encodeMvt } from './mvt-encode.js';
import type { VectorTileData } from './vector-model.js';

export type VectorFormat = 'pbf' | 'mlt';

export interface VectorBytes {
  bytes: Uint8Array;
  format: VectorFormat;
}

export type VectorTask =
  | { op: 'transcode'; input: VectorBytes; to: VectorFormat; encoding?: ContentEncoding; levels?: CompressionLevels }
  | { op: 'merge'; members: (VectorBytes & { id: string })[] }
  | { op: 'geojson'; input: VectorBytes }
  | { op: 'query'; tiles: (VectorBytes & { z: number; x: number; y: number })[]; bbox: BBox; layers?: string[]; limit: number };

export interface MergeResult {
  mvt: Uint8Array;
  /** Members whose tile could not be decoded, with the reason; they were left out. */
  failed: { id: string; reason: string }[];
}

export type VectorTaskResult<T extends VectorTask> = T extends { op: 'transcode' }
  ? Uint8Array
  : T extends { op: 'merge' }
    ? MergeResult
    : T extends { op: 'geojson' }
      ? string
      : QueryResult;

const gunzipped = (b: Uint8Array) => (b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b ? new Uint8Array(gunzipSync(b)) : b);

export function decodeVector(input: VectorBytes): VectorTileData {
  const raw = gunzipped(input.bytes);
  return input.format === 'mlt' ? decodeMlt(raw) : decodeMvt(raw);
}

export function transcode(input: VectorBytes, to: VectorFormat): Uint8Array {
  const raw = gunzipped(input.bytes);
  if (input.format === to) return raw;
  const tile = input.format === 'mlt' ? decodeMlt(raw) : decodeMvt(raw);
  return to === 'mlt' ? encodeMlt(tile) : encodeMvt(tile);
}

function merge(members: (VectorBytes & { id: string })[]): MergeResult {
  const failed: MergeResult['failed'] = [];
  const tiles: VectorTileData[] = [];
  for (const m of members) {
    try {
      tiles.push(decodeVector(m));
    } catch (err) {
      failed.push({ id: m.id, reason: (err as Error).message });
    }
  }
  return { mvt: encodeMvt(mergeTiles(tiles)), failed };
}

export function runVectorTask(task: VectorTask): Uint8Array | MergeResult | string | QueryResult {
  switch (task.op) {
    case 'transcode': {
      const out = transcode(task.input, task.to);
      return task.encoding && task.levels ? encode(out, task.encoding, task.levels) : out;
    }
    case 'merge':
      return merge(task.members);
    case 'geojson':
      return JSON.stringify(tileToGeoJson(decodeVector(task.input)));
    case 'query':
      return queryTiles(
        task.tiles.map((t) => ({ z: t.z, x: t.x, y: t.y, tile: decodeVector(t) })),
        task.bbox,
        task.layers,
        task.limit,
      );
  }
}
