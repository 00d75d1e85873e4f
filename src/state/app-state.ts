// AppState: an immutable snapshot of everything a request needs, built from one configuration (state/build.ts).
// A reload builds a new snapshot beside the old one and swaps a single reference (see state/holder.ts);
// requests keep the snapshot they started with. Only the shape lives here, with type imports of its parts, so
// that sources, styles and tiles can take a state without importing what builds one.
import type { Config } from '../config/schema.js';
import type { TileSource } from '../sources/source.js';
import type { CompositeSource } from '../sources/composite.js';
import type { FontIndex } from '../styles/fonts.js';
import type { LoadedStyle } from '../styles/loaded-style.js';
import type { TileCache } from '../tiles/tile-cache.js';
import type { PgPool } from '../sources/postgres/pool.js';
import type { RasterPool } from '../sources/raster/pool.js';

export interface AppState {
  readonly config: Config;
  readonly configHash: string;
  readonly configFile: string | undefined;
  /** Unix seconds when this snapshot was built. */
  readonly loadedAt: number;
  readonly sources: ReadonlyMap<string, TileSource>;
  /** Named composites (`[[composites]]`), by id; ad-hoc `a+b` composites are resolved per request (serve/resolve.ts). */
  readonly composites: ReadonlyMap<string, CompositeSource>;
  /** The configured styles, validated (src/styles/registry.ts). */
  readonly styles: ReadonlyMap<string, LoadedStyle>;
  /** The fonts directory and the font names in it. */
  readonly fonts: FontIndex;
  readonly tileCache: TileCache;
  /**
   * The PostgreSQL pool of `[postgres]`, when configured. `postgres.ready()` is a cheap readiness check (the last
   * contact with the database succeeded); `await postgres.check()` asks the database now.
   */
  readonly postgres: PgPool | undefined;
  /** The GDAL worker threads of this state's raster sources (COG/VRT, out-of-database rasters), when it has any. */
  readonly raster: RasterPool | undefined;
  close(): Promise<void>;
}
