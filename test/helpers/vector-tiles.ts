// Reading vector tiles the way a client does, with the reference libraries (not this server's own codecs):
// MVT through @mapbox/vector-tile, MLT through @maplibre/mlt's decoder. Both give comparable plain features.
import http from 'node:http';
import { createRequire } from 'node:module';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { VectorTile } from '@mapbox/vector-tile';
import { decodeTile } from '@maplibre/mlt';
import { PbfReader } from 'pbf';

export interface PlainFeature {
  /** As the library gives it: a double for MVT (inexact past 2^53), number or bigint for MLT. */
  id: number | bigint | undefined;
  /** 1 point(s), 2 line(s), 3 polygon(s). */
  type: number;
  /** Parts as [x, y] lists; polygon rings closed (both libraries close them). */
  geometry: [number, number][][];
  properties: Record<string, unknown>;
}

export type PlainTile = Map<string, { extent: number; features: PlainFeature[] }>;

export function readMvt(bytes: Uint8Array): PlainTile {
  const tile = new VectorTile(new PbfReader(bytes));
  const out: PlainTile = new Map();
  for (const [name, layer] of Object.entries(tile.layers)) {
    const features: PlainFeature[] = [];
    for (let i = 0; i < layer.length; i++) {
      const f = layer.feature(i);
      features.push({ id: f.id, type: f.type, geometry: f.loadGeometry().map((r) => r.map((p) => [p.x, p.y] as [number, number])), properties: { ...f.properties } });
    }
    out.set(name, { extent: layer.extent, features });
  }
  return out;
}

const MLT_TO_MVT_TYPE = [1, 2, 3, 1, 2, 3];

export function readMlt(bytes: Uint8Array): PlainTile {
  const out: PlainTile = new Map();
  for (const table of decodeTile(bytes, undefined, false)) {
    const features = table.getFeatures().map((f) => ({
      id: f.id,
      type: MLT_TO_MVT_TYPE[f.geometry.type],
      geometry: f.geometry.coordinates.map((r) => r.map((p) => [p.x, p.y] as [number, number])),
      properties: { ...f.properties },
    }));
    out.set(table.name, { extent: table.extent, features });
  }
  return out;
}

/** Properties as sorted entries with bigints as numbers, for comparing what the two libraries give. */
export function comparableProps(p: Record<string, unknown>): [string, unknown][] {
  return Object.entries(p)
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => [k, typeof v === 'bigint' ? Number(v) : v] as [string, unknown])
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

export const featureCount = (t: PlainTile) => [...t.values()].reduce((n, l) => n + l.features.length, 0);

type Zstd = { init(): Promise<void>; decompress(b: Uint8Array): Uint8Array };
let zstd: Zstd | undefined;

/** zstd decoding for responses sent with `Content-Encoding: zstd` (Node 20's zlib has no zstd). */
export async function loadZstd(): Promise<void> {
  if (zstd) return;
  const mod = createRequire(import.meta.url)('@bokuweb/zstd-wasm') as Zstd;
  await mod.init();
  zstd = mod;
}

export interface Got {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** The body as sent (still content-encoded). */
  raw: Buffer;
  /** The body with its content encoding (gzip, br; zstd after loadZstd()) removed. */
  body: Buffer;
}

/** A GET without fetch's automatic decompression, so that Content-Encoding and bytes can be checked. */
export function get(url: string, headers: Record<string, string> = {}): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const raw = Buffer.concat(chunks);
        const enc = res.headers['content-encoding'];
        const body = enc === 'gzip' ? gunzipSync(raw) : enc === 'br' ? brotliDecompressSync(raw) : enc === 'zstd' && zstd ? Buffer.from(zstd.decompress(raw)) : raw;
        resolve({ status: res.statusCode ?? 0, headers: res.headers, raw, body });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
  });
}

export async function getJson<T = Record<string, unknown>>(url: string): Promise<{ status: number; contentType: string; body: T }> {
  const res = await fetch(url);
  return { status: res.status, contentType: res.headers.get('content-type') ?? '', body: (await res.json()) as T };
}
