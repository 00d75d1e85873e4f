// An out-of-database raster catalogue (`[[postgres.outdb_rasters]]`): for each tile the database function
// `f(z, x, y, tile_bbox geometry, params json)` names the raster files (COG or VRT) that cover it; the raster
// pool composites them in the order returned. `rescale_min`/`rescale_max` columns feed dynamic colormaps.
import { escapeIdentifier as ident } from 'pg';
import type { Config, OutdbRasterConfig } from '../../config/schema.js';
import type { RasterPool } from './pool.js';
import type { TileFormat } from '../../tiles/format.js';
import type { TileFunction } from '../postgres/discover.js';
import type { PgPool } from '../postgres/pool.js';
import { statementName } from '../postgres/table.js';
import { defaultCenter, SourceOpenError, WORLD_BOUNDS, type Bounds, type SourceInfo, type TileParams, type TileSource } from '../source.js';
import { DEM_FORMATS, RASTER_FORMATS, rasterQuality } from './cog.js';
import { runTerrain } from '../../terrain/work.js';
import { isRemotePath } from '../../config/object-location.js';
import { RasterStorageHealth } from './storage-health.js';

interface Row {
  filepath: string | null;
  rescale_min?: number | null;
  rescale_max?: number | null;
}

export class OutdbRasterSource implements TileSource {
  private readonly health: RasterStorageHealth;
  /** Set once the catalogue has named a file on object storage: from then on readiness watches its store. */
  storageProblem?: () => string | undefined;

  private constructor(
    readonly info: SourceInfo,
    private readonly cfg: OutdbRasterConfig,
    private readonly sql: string,
    private readonly db: PgPool,
    private readonly rasters: RasterPool,
    private readonly config: Config,
  ) {
    this.health = new RasterStorageHealth(cfg.id);
  }

  static open(cfg: OutdbRasterConfig, fn: TileFunction, db: PgPool, rasters: RasterPool, config: Config): OutdbRasterSource {
    if (!fn.outColumns.includes('filepath')) throw new SourceOpenError(cfg.id, `${fn.schema}.${fn.name} must return a column named filepath`);
    if (cfg.dem && cfg.colormap) throw new SourceOpenError(cfg.id, 'dem and colormap exclude each other: an elevation source serves encoded elevations');
    const dynamic = cfg.colormap?.rescale_mode === 'dynamic';
    if (dynamic && !(fn.outColumns.includes('rescale_min') && fn.outColumns.includes('rescale_max'))) {
      throw new SourceOpenError(cfg.id, `rescale_mode "dynamic" needs ${fn.schema}.${fn.name} to return rescale_min and rescale_max columns`);
    }
    const cols = ['filepath', ...(dynamic ? ['rescale_min', 'rescale_max'] : [])].map((c) => `${ident(c)}`).join(', ');
    // tile_bbox is the tile's envelope in EPSG:3857, made by PostGIS from the bound z, x, y.
    const sql = `SELECT ${cols} FROM ${ident(fn.schema)}.${ident(fn.name)}($1::${fn.argTypes[0]}, $2::${fn.argTypes[1]}, $3::${fn.argTypes[2]}, ST_TileEnvelope($1::int, $2::int, $3::int), $4::${fn.argTypes[4]})`;
    const bounds = (cfg.bounds as Bounds | undefined) ?? WORLD_BOUNDS;
    const info: SourceInfo = {
      id: cfg.id,
      type: 'postgres-outdb-raster',
      format: 'png',
      formats: cfg.dem ? DEM_FORMATS : RASTER_FORMATS,
      ...(cfg.dem ? { dem: cfg.dem.encoding } : {}),
      compression: 'none',
      name: cfg.name ?? cfg.id,
      minzoom: cfg.minzoom,
      maxzoom: cfg.maxzoom,
      bounds,
      center: defaultCenter(bounds, cfg.minzoom, cfg.maxzoom),
      tileSize: config.raster.tile_size,
      takesParams: true,
    };
    return new OutdbRasterSource(info, cfg, sql, db, rasters, config);
  }

  /** The catalogue's answer for a tile: its rows, and the files among them (in the order returned). */
  private async rows(z: number, x: number, y: number, params: TileParams): Promise<{ rows: Row[]; files: string[] }> {
    const { rows } = await this.db.query<Row>({ name: statementName(this.sql), text: this.sql, values: [z, x, y, JSON.stringify(params)] });
    const files = rows.map((r) => r.filepath).filter((f): f is string => typeof f === 'string' && f.length > 0);
    if (!this.storageProblem && files.some(isRemotePath)) this.storageProblem = () => this.health.unreachable;
    return { rows, files };
  }

  /**
   * Elevations over a tile's window with a border (an elevation catalogue): the files the catalogue names for the
   * tile, warped together; undefined where it names none or they have no data there.
   */
  async demWindow(z: number, x: number, y: number, size: number, border: number): Promise<Float32Array | undefined> {
    const { files } = await this.rows(Math.min(z, this.info.maxzoom), ...ancestor(z, x, y, this.info.maxzoom), {});
    if (files.length === 0) return undefined;
    return this.health.watch(files, () => this.rasters.demWindow(files, z, x, y, size, border));
  }

  /** Elevations at points inside one tile of the catalogue's deepest zoom, from the files it names there. */
  async demPoints(tile: { z: number; x: number; y: number }, points: Float64Array): Promise<Float64Array> {
    const { files } = await this.rows(tile.z, tile.x, tile.y, {});
    if (files.length === 0) return new Float64Array(points.length / 2).fill(Number.NaN);
    return this.health.watch(files, () => this.rasters.demPoints(files, points));
  }

  async getTile(z: number, x: number, y: number, params: TileParams = {}, format: TileFormat = 'png'): Promise<Uint8Array | undefined> {
    const { rows, files } = await this.rows(z, x, y, params);
    if (files.length === 0) return undefined;
    const dem = this.cfg.dem;
    if (dem) {
      const size = this.config.raster.tile_size;
      const data = await this.health.watch(files, () => this.rasters.demWindow(files, z, x, y, size, 0));
      if (!data) return undefined;
      return runTerrain({ op: 'encode-dem', window: { z, x, y, size, border: 0, data }, encoding: dem.encoding, format: format === 'webp' ? 'webp' : 'png', pngLevel: this.config.render.png_compression }, this.config);
    }
    const ranged = rows.find((r) => r.rescale_min != null && r.rescale_max != null);
    return this.health.watch(files, () =>
      this.rasters.tile({
        files,
        z,
        x,
        y,
        size: this.config.raster.tile_size,
        resampling: this.cfg.resampling,
        format: format as 'png' | 'jpg' | 'webp',
        colormap: this.cfg.colormap,
        rescale: ranged ? { min: Number(ranged.rescale_min), max: Number(ranged.rescale_max) } : undefined,
        quality: rasterQuality(this.config),
      }),
    );
  }

  async close(): Promise<void> {
    // The pools belong to the state, which closes them.
    this.health.close();
  }
}

/** The tile at zoom `limit` holding tile z/x/y (itself when z is not deeper). */
function ancestor(z: number, x: number, y: number, limit: number): [number, number] {
  const d = Math.max(0, z - limit);
  return [Math.floor(x / 2 ** d), Math.floor(y / 2 ** d)];
}
