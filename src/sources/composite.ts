// Composite sources: several vector sources served as one MVT source, named (`[[composites]]`) or ad hoc
// (`/data/a+b+c/...`). Members are read concurrently; a member's gzip and MLT tiles are normalised to MVT and
// same-named layers are merged (tiles/merge.ts). TileJSON by the spec's rule 1: vector_layers is the union
// by id, minzoom the largest member minzoom, maxzoom the smallest member maxzoom; bounds the union.
import type { CompositeConfig, Config } from '../config/schema.js';
import { log } from '../log.js';
import { tileIntersectsBounds } from '../tiles/coords.js';
import { isGzip, isVector } from '../tiles/format.js';
import { runVector } from '../tiles/vector-work.js';
import { gunzipSync } from 'node:zlib';
import { SourceOpenError, TileUnavailableError, type Bounds, type SourceInfo, type TileSource, type VectorLayer } from './source.js';

/** Why a set of sources cannot form a composite; `status` is the HTTP answer for an ad-hoc composite. */
export class CompositeError extends Error {
  constructor(
    readonly status: 400 | 404,
    readonly title: string,
    message: string,
  ) {
    super(message);
    this.name = 'CompositeError';
  }
}

function unionBounds(all: readonly Bounds[]): Bounds {
  // A member crossing the antimeridian (west > east) makes the union span every longitude.
  const crosses = all.some((b) => b[0] > b[2]);
  return [
    crosses ? -180 : Math.min(...all.map((b) => b[0])),
    Math.min(...all.map((b) => b[1])),
    crosses ? 180 : Math.max(...all.map((b) => b[2])),
    Math.max(...all.map((b) => b[3])),
  ];
}

function unionLayers(members: readonly TileSource[]): VectorLayer[] {
  const seen = new Map<string, VectorLayer>();
  for (const m of members) for (const l of m.info.vectorLayers ?? []) if (!seen.has(l.id)) seen.set(l.id, l);
  return [...seen.values()];
}

/** Checks the members and describes the composite; throws CompositeError naming what is wrong. */
export function describeComposite(id: string, members: readonly TileSource[]): SourceInfo {
  const raster = members.filter((m) => !isVector(m.info.format));
  if (raster.length) {
    const names = raster.map((m) => `"${m.info.id}" (${m.info.format})`).join(', ');
    throw new CompositeError(400, 'Raster source in a composite', `composite "${id}": ${names} ${raster.length > 1 ? 'are raster sources' : 'is a raster source'}; only vector sources can be merged`);
  }
  const minzoom = Math.max(...members.map((m) => m.info.minzoom));
  const maxzoom = Math.min(...members.map((m) => m.info.maxzoom));
  if (minzoom > maxzoom) {
    const ranges = members.map((m) => `"${m.info.id}" ${m.info.minzoom}-${m.info.maxzoom}`).join(', ');
    throw new CompositeError(400, 'No common zoom range', `composite "${id}": the members' zoom ranges do not overlap (${ranges})`);
  }
  const bounds = unionBounds(members.map((m) => m.info.bounds));
  const [cx, cy, cz] = members[0].info.center;
  const attributions = [...new Set(members.map((m) => m.info.attribution).filter((a): a is string => !!a))];
  return {
    id,
    type: 'composite',
    format: 'pbf',
    compression: 'none',
    name: id,
    attribution: attributions.length ? attributions.join(' | ') : undefined,
    minzoom,
    maxzoom,
    bounds,
    center: [cx, cy, Math.min(maxzoom, Math.max(minzoom, cz))],
    vectorLayers: unionLayers(members),
    tilesOutsideBounds: true,
  };
}

export class CompositeSource implements TileSource {
  readonly info: SourceInfo;

  constructor(
    id: string,
    readonly members: readonly TileSource[],
    private readonly config: Config,
  ) {
    this.info = describeComposite(id, members);
  }

  /** The merged MVT; zero bytes (an empty MVT) when no member has the tile. */
  async getTile(z: number, x: number, y: number): Promise<Uint8Array> {
    const coord = { z, x, y };
    // A member whose upstream failed but kept its last good copy (an xyz source) is merged from that copy, and
    // the merged tile is handed on the same way: answered marked stale, cached nowhere (docs/xyz.md).
    let staleFrom: TileUnavailableError | undefined;
    const tiles = await Promise.all(
      this.members.map((m) => {
        const { info } = m;
        const covers = z >= info.minzoom && z <= info.maxzoom && (info.tilesOutsideBounds || tileIntersectsBounds(coord, info.bounds));
        if (!covers) return Promise.resolve(undefined);
        return m.getTile(z, x, y).catch((err: unknown) => {
          if (!(err instanceof TileUnavailableError) || err.stale === undefined) throw err;
          staleFrom = err;
          return err.stale;
        });
      }),
    );
    const merged = await this.merge(tiles, z, x, y);
    const from = staleFrom as TileUnavailableError | undefined;
    if (from) throw new TileUnavailableError(from.status, from.title, from.detail, from.retryAfter, merged);
    return merged;
  }

  private async merge(tiles: (Uint8Array | undefined)[], z: number, x: number, y: number): Promise<Uint8Array> {
    const present = this.members.flatMap((m, i) => {
      const bytes = tiles[i];
      return bytes && bytes.byteLength > 0 ? [{ id: m.info.id, format: m.info.format as 'pbf' | 'mlt', bytes }] : [];
    });
    if (present.length === 0) return new Uint8Array(0);
    // One MVT member: its tile is the answer as it is, no decoding needed.
    if (present.length === 1 && present[0].format === 'pbf') {
      const only = present[0].bytes;
      return isGzip(only) ? new Uint8Array(gunzipSync(only)) : only;
    }
    const { mvt, failed } = await runVector({ op: 'merge', members: present }, this.config);
    for (const f of failed) log.warn({ composite: this.info.id, member: f.id, z, x, y, reason: f.reason }, 'composite member tile could not be decoded; left out');
    return mvt;
  }

  /** Members belong to the state that owns them; a composite holds nothing of its own. */
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/** Builds the named composites of a state from its opened sources; a raster member or disjoint zoom ranges fail the build. */
export function buildComposites(entries: readonly CompositeConfig[], sources: ReadonlyMap<string, TileSource>, config: Config): Map<string, CompositeSource> {
  const out = new Map<string, CompositeSource>();
  for (const c of entries) {
    try {
      out.set(c.id, new CompositeSource(c.id, c.sources.map((m) => sources.get(m)!), config));
    } catch (err) {
      if (err instanceof CompositeError) throw new SourceOpenError(c.id, err.message);
      throw err;
    }
  }
  return out;
}
