// Elevation sources: a configured source marked `dem` (a single-band COG/VRT in metres, or an archive of encoded
// terrain tiles) seen as a surface the terrain products read: a web-mercator window of elevations around any tile
// (for hillshade and contours, also above the data's own deepest zoom) and elevations at points (the API).
import sharp from 'sharp';
import type { AppState } from '../state/app-state.js';
import type { SourceInfo, TileSource } from '../sources/source.js';
import type { RasterPool } from '../sources/raster/pool.js';
import { OutdbRasterSource } from '../sources/raster/outdb.js';
import type { DemWindow } from '../terrain/dem-window.js';
import type { DemEncoding } from '../terrain/dem-encoding.js';
import { tilesNeeded, sampleWindow, type MosaicPlan } from '../terrain/mosaic.js';
import { groupByTile } from '../terrain/tile-groups.js';
import type { LonLat } from '../terrain/profile.js';
import { lonLatToTile } from '../tiles/coords.js';
import { runTerrain } from '../terrain/work.js';
import type { ArchiveTiles, DecodedTiles, WindowInput } from '../terrain/terrain-ops.js';
import { LRUCache } from 'lru-cache';
import { expiries } from '../expire/expiries.js';

/**
 * Archive DEM tiles decoded to metres, for the process: a window reads the tiles around its own, so each archive
 * tile is asked for by up to nine windows, and decoding a 512 px PNG costs more than shading it. They live in
 * shared memory, so a terrain thread reads them without a copy whichever thread decoded them, and a window whose
 * tiles are all here reads nothing from the archive. 48 MB (48 tiles of 512 px, 192 of 256 px).
 */
const decodedTiles = new LRUCache<string, { grid: Float32Array; madeAt: number }>({ maxSize: 48 * 512 * 512, sizeCalculation: (a) => a.grid.length });

/**
 * Keeps the tiles a terrain task decoded for the windows after it. `madeAt`: when the task that read them began
 * (an expiry of the source at or after it makes a kept tile be read again).
 */
export function keepDecodedTiles(decoded: DecodedTiles, madeAt: number): void {
  for (const d of decoded) decodedTiles.set(d.key, { grid: d.grid, madeAt });
}

/** Zooms above the data's deepest zoom at which hillshade and contours are still made (as clients overzoom a DEM). */
export const PRODUCT_OVERZOOM = 4;

export interface Elevation {
  readonly id: string;
  readonly encoding: DemEncoding;
  /** The source's own description: zoom range (its data's), bounds, tile size. */
  readonly info: SourceInfo;
  /** Deepest zoom of hillshade and contour tiles. */
  readonly productMaxzoom: number;
  /** Whether points are read at the file's own resolution (COG/VRT) or from tiles (archives). */
  readonly kind: 'raster' | 'archive';
  /** Elevations over a tile's window with `border` pixels around it; undefined where there is no data at all. */
  window(z: number, x: number, y: number, size: number, border: number): Promise<DemWindow | undefined>;
  /** What the terrain pool makes that window from: the window itself, or an archive's tiles to assemble it from there. */
  input(z: number, x: number, y: number, size: number, border: number): Promise<WindowInput | undefined>;
  /** Elevations at lon/lat points (NaN where there is no data). `zoom` picks an archive's level (default: its deepest). */
  points(points: readonly LonLat[], zoom?: number): Promise<Float64Array>;
}

class RasterElevation implements Elevation {
  readonly kind = 'raster';
  readonly productMaxzoom: number;
  constructor(
    readonly info: SourceInfo,
    readonly encoding: DemEncoding,
    private readonly file: string,
    private readonly pool: RasterPool,
  ) {
    this.productMaxzoom = Math.min(22, info.maxzoom + PRODUCT_OVERZOOM);
  }
  get id(): string {
    return this.info.id;
  }
  async window(z: number, x: number, y: number, size: number, border: number): Promise<DemWindow | undefined> {
    const data = await this.pool.demWindow([this.file], z, x, y, size, border);
    return data && { z, x, y, size, border, data };
  }
  async input(z: number, x: number, y: number, size: number, border: number): Promise<WindowInput | undefined> {
    const read = await this.pool.demGrid([this.file], z, x, y, size, border);
    if (read === undefined) return undefined;
    return read instanceof Float32Array ? { window: { z, x, y, size, border, data: read } } : { samples: read, at: { z, x, y, size, border } };
  }
  points(points: readonly LonLat[]): Promise<Float64Array> {
    const flat = new Float64Array(points.length * 2);
    points.forEach(([lon, lat], i) => {
      flat[2 * i] = lon;
      flat[2 * i + 1] = lat;
    });
    return this.pool.demPoints([this.file], flat);
  }
}

/**
 * An out-of-database raster catalogue marked `dem`: each window is warped from the files the database function
 * names for its tile (at the catalogue's deepest zoom for deeper windows), points from the files it names for the
 * deepest tile holding them, at the files' own resolution.
 */
class CatalogueElevation implements Elevation {
  readonly kind = 'raster';
  readonly productMaxzoom: number;
  constructor(
    private readonly source: OutdbRasterSource,
    readonly encoding: DemEncoding,
  ) {
    this.productMaxzoom = Math.min(22, source.info.maxzoom + PRODUCT_OVERZOOM);
  }
  get info(): SourceInfo {
    return this.source.info;
  }
  get id(): string {
    return this.info.id;
  }
  async window(z: number, x: number, y: number, size: number, border: number): Promise<DemWindow | undefined> {
    const data = await this.source.demWindow(z, x, y, size, border);
    return data && { z, x, y, size, border, data };
  }
  async input(z: number, x: number, y: number, size: number, border: number): Promise<WindowInput | undefined> {
    const window = await this.window(z, x, y, size, border);
    return window && { window };
  }
  async points(points: readonly LonLat[]): Promise<Float64Array> {
    const out = new Float64Array(points.length).fill(Number.NaN);
    const groups = [...groupByTile(points as LonLat[], this.info.maxzoom, 256).values()];
    for (let i = 0; i < groups.length; i += POINT_TILES_AT_ONCE) {
      await Promise.all(
        groups.slice(i, i + POINT_TILES_AT_ONCE).map(async (g) => {
          const flat = new Float64Array(g.items.length * 2);
          g.items.forEach((item, k) => {
            flat[2 * k] = points[item.index][0];
            flat[2 * k + 1] = points[item.index][1];
          });
          const values = await this.source.demPoints(g, flat);
          g.items.forEach((item, k) => (out[item.index] = values[k]));
        }),
      );
    }
    return out;
  }
}

/** Tile windows read at once for one batch of points: each costs a pool task, and the pool's queue is shared. */
const POINT_TILES_AT_ONCE = 8;

class ArchiveElevation implements Elevation {
  readonly kind = 'archive';
  private tileSize: number | undefined;
  constructor(
    private readonly source: TileSource,
    readonly encoding: DemEncoding,
    private readonly state: AppState,
  ) {}
  get info(): SourceInfo {
    return this.source.info;
  }
  get id(): string {
    return this.info.id;
  }
  get productMaxzoom(): number {
    return Math.min(22, this.info.maxzoom + PRODUCT_OVERZOOM);
  }

  async window(z: number, x: number, y: number, size: number, border: number): Promise<DemWindow | undefined> {
    const madeAt = Date.now();
    const input = await this.input(z, x, y, size, border);
    if (!input) return undefined;
    const { value, decoded } = await runTerrain({ op: 'archive-window', ...input.archive }, this.state.config);
    keepDecodedTiles(decoded, madeAt);
    return value;
  }

  async input(z: number, x: number, y: number, size: number, border: number): Promise<{ archive: ArchiveTiles } | undefined> {
    const info = this.info;
    const sourceZoom = Math.min(z, info.maxzoom);
    // The tiles a window needs depend on where it lies, not on the archive's tile size: a guess lists the same ones.
    const plan: MosaicPlan = { z, x, y, size, border, sourceZoom, sourceSize: this.tileSize ?? info.tileSize ?? 256 };
    const prefix = `${this.state.configHash}/${info.id}@${info.revision ?? ''}/${sourceZoom}`;
    // Tiles decoded before are passed as they are; the others are read from the archive.
    const tiles: ArchiveTiles['tiles'] = await Promise.all(
      tilesNeeded(plan).map(async (t) => {
        const key = `${prefix}/${t.x}/${t.y}`;
        const kept = decodedTiles.get(key);
        const grid = kept && !expiries.isStale([info.id], sourceZoom, t.x, t.y, kept.madeAt) ? kept.grid : undefined;
        return grid ? { key, ...t, grid } : { key, ...t, bytes: await this.source.getTile(sourceZoom, t.x, t.y) };
      }),
    );
    const found = tiles.filter((t) => t.grid !== undefined || (t.bytes !== undefined && t.bytes.byteLength > 0));
    if (found.length === 0) return undefined;
    if (this.tileSize === undefined) {
      const first = found.find((t) => t.bytes)?.bytes;
      if (first) {
        const meta = await sharp(first).metadata();
        if (!meta.width || meta.width !== meta.height) throw new Error(`source "${info.id}": a DEM tile that is not square (${meta.width}x${meta.height})`);
        this.tileSize = meta.width;
      }
    }
    return { archive: { plan: { ...plan, sourceSize: this.tileSize ?? plan.sourceSize }, encoding: this.encoding, tiles: found } };
  }

  async points(points: readonly LonLat[], zoom?: number): Promise<Float64Array> {
    const info = this.info;
    const out = new Float64Array(points.length).fill(Number.NaN);
    const z = Math.min(info.maxzoom, Math.max(info.minzoom, Math.round(zoom ?? info.maxzoom)));
    if (this.tileSize === undefined) {
      // A tile under the source's centre, somewhere with data, tells the archive's tile size.
      const centre = lonLatToTile(info.center[0], info.center[1], z);
      await this.window(z, centre.x, centre.y, 1, 0);
    }
    const size = this.tileSize ?? info.tileSize ?? 256;
    const groups = [...groupByTile(points as LonLat[], z, size).values()];
    for (let i = 0; i < groups.length; i += POINT_TILES_AT_ONCE) {
      await Promise.all(
        groups.slice(i, i + POINT_TILES_AT_ONCE).map(async (g) => {
          // One pixel of border: a point near the tile's edge blends with the neighbour's pixels.
          const win = await this.window(g.z, g.x, g.y, size, 1);
          if (!win) return;
          for (const item of g.items) out[item.index] = sampleWindow(win, item.px, item.py);
        }),
      );
    }
    return out;
  }
}

export type ElevationLookup = { ok: true; elevation: Elevation } | { ok: false; status: 400 | 404; title: string; detail: string };

const byState = new WeakMap<AppState, Map<string, Elevation>>();

/** The elevation source `id` of a state, or why there is none (unknown id: 404; a source without `dem`: 400). */
export function elevationSource(state: AppState, id: string): ElevationLookup {
  const source = state.sources.get(id);
  if (!source) return { ok: false, status: 404, title: 'Unknown source', detail: `no source "${id}"` };
  const encoding = source.info.dem;
  if (!encoding) return { ok: false, status: 400, title: 'Not an elevation source', detail: `source "${id}" holds no elevation data (a source is one when its configuration has dem = { encoding = ... })` };
  let kept = byState.get(state);
  if (!kept) byState.set(state, (kept = new Map()));
  let found = kept.get(id);
  if (!found) {
    const cfg = state.config.sources.find((s) => s.id === id);
    found =
      source instanceof OutdbRasterSource
        ? new CatalogueElevation(source, encoding)
        : (cfg?.type === 'cog' || cfg?.type === 'vrt') && state.raster
          ? new RasterElevation(source.info, encoding, cfg.path, state.raster)
          : new ArchiveElevation(source, encoding, state);
    kept.set(id, found);
  }
  return { ok: true, elevation: found };
}

/** Every elevation source of a state, in configuration order. */
export function elevationSources(state: AppState): Elevation[] {
  const out: Elevation[] = [];
  for (const s of state.sources.values()) {
    if (!s.info.dem) continue;
    const found = elevationSource(state, s.info.id);
    if (found.ok) out.push(found.elevation);
  }
  return out;
}
