// A Cloud Optimized GeoTIFF (`type = "cog"`) or GDAL VRT (`type = "vrt"`) served as raster tiles (png, jpg,
// webp), warped to web mercator in the raster pool. Zoom range: 0 up to the zoom where a tile pixel matches a
// source pixel (overridable); bounds from the file's georeferencing, so tiles outside the data answer 204.
import type { Config, RasterSourceConfig } from '../../config/schema.js';
import type { RasterPool } from './pool.js';
import type { TileFormat } from '../../tiles/format.js';
import { describedSource, SourceOpenError, type SourceInfo, type TileParams, type TileSource } from '../source.js';
import { isRemotePath } from '../../config/object-location.js';
import { RasterStorageHealth } from './storage-health.js';
import { runTerrain } from '../../terrain/work.js';

export const RASTER_FORMATS: readonly TileFormat[] = ['png', 'jpg', 'webp'];
export const DEM_FORMATS: readonly TileFormat[] = ['png', 'webp'];

/** Encoder settings of raster tiles, shared with rendered tiles (`[render]`). */
export const rasterQuality = (config: Config) => ({ png: config.render.png_compression, jpeg: config.render.jpeg_quality, webp: config.render.webp_quality });

export class CogSource implements TileSource {
  private readonly health: RasterStorageHealth;
  /** A file on object storage: readiness names the source while its store fails (storage-health.ts). */
  readonly storageProblem?: () => string | undefined;

  private constructor(
    readonly info: SourceInfo,
    private readonly cfg: RasterSourceConfig,
    private readonly pool: RasterPool,
    private readonly config: Config,
  ) {
    this.health = new RasterStorageHealth(cfg.id);
    if (isRemotePath(cfg.path)) this.storageProblem = () => this.health.unreachable;
  }

  static async open(cfg: RasterSourceConfig, pool: RasterPool, config: Config): Promise<CogSource> {
    let described;
    try {
      described = await pool.describe(cfg.path);
    } catch (err) {
      const msg = (err as Error).message;
      throw new SourceOpenError(cfg.id, `cannot open ${cfg.type.toUpperCase()} ${cfg.path}: ${/No such file|does not exist/i.test(msg) ? 'no such file' : msg}`);
    }
    if (cfg.dem && described.bands !== 1) throw new SourceOpenError(cfg.id, `dem needs single-band elevation data in metres; ${cfg.path} has ${described.bands} bands`);
    if (cfg.colormap && described.bands !== 1) throw new SourceOpenError(cfg.id, `colormap needs single-band data; ${cfg.path} has ${described.bands} bands`);
    const minzoom = cfg.minzoom ?? 0;
    const size = config.raster.tile_size;
    // describe() counts in 256 px tiles; a 512 px tile reaches the same resolution one zoom earlier.
    const maxzoom = cfg.maxzoom ?? Math.max(minzoom, described.nativeZoom - (size === 512 ? 1 : 0));
    if (minzoom > maxzoom) throw new SourceOpenError(cfg.id, `minzoom ${minzoom} is above maxzoom ${maxzoom}`);
    const info: SourceInfo = {
      ...describedSource(cfg, minzoom, maxzoom, described.bounds),
      type: cfg.type,
      format: 'png',
      // Elevations survive only lossless encodings: no JPEG.
      formats: cfg.dem ? DEM_FORMATS : RASTER_FORMATS,
      ...(cfg.dem ? { dem: cfg.dem.encoding } : {}),
      compression: 'none',
      tileSize: size,
    };
    return new CogSource(info, cfg, pool, config);
  }

  getTile(z: number, x: number, y: number, _params?: TileParams, format: TileFormat = 'png'): Promise<Uint8Array | undefined> {
    const files = [this.cfg.path];
    const dem = this.cfg.dem;
    if (dem) {
      // Elevations warped to the tile (bilinear, whatever `resampling` says: a DEM is a surface) and encoded in the pool.
      return this.health.watch(files, async () => {
        const size = this.config.raster.tile_size;
        const data = await this.pool.demWindow([this.cfg.path], z, x, y, size, 0);
        if (!data) return undefined;
        const window = { z, x, y, size, border: 0, data };
        return runTerrain({ op: 'encode-dem', window, encoding: dem.encoding, format: format === 'webp' ? 'webp' : 'png', pngLevel: this.config.render.png_compression }, this.config);
      });
    }
    return this.health.watch(files, () =>
      this.pool.tile({
        files,
        z,
        x,
        y,
        size: this.config.raster.tile_size,
        resampling: this.cfg.resampling ?? 'bilinear',
        format: format as 'png' | 'jpg' | 'webp',
        colormap: this.cfg.colormap,
        quality: rasterQuality(this.config),
      }),
    );
  }

  async close(): Promise<void> {
    // The raster pool belongs to the state, which destroys it.
    this.health.close();
  }
}
