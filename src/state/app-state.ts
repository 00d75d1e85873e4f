// AppState: an immutable snapshot of everything a request needs, built from one configuration.
// A reload builds a new snapshot beside the old one and swaps a single reference (see state/holder.ts);
// requests keep the snapshot they started with.
import type { LoadedConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { openSource } from '../sources/open.js';
import { SourceOpenError, type TileSource } from '../sources/source.js';
import type { CompositeSource } from '../sources/composite.js';
import { buildComposites } from '../sources/resolve.js';
import { loadFontIndex, type FontIndex } from '../styles/fonts.js';
import { loadStyles, reportWarnings, type LoadedStyle } from '../styles/registry.js';
import { log } from '../log.js';
import { TileCache } from '../tiles/tile-cache.js';
import { workerCount } from '../cluster/sizing.js';
import { PgPool } from '../sources/postgres/pool.js';
import { openDatabaseSources } from '../sources/postgres/publish.js';
import { RasterPool } from '../raster/pool.js';
import { CogSource } from '../sources/raster/cog.js';
import { OutdbRasterSource } from '../sources/raster/outdb.js';

export interface AppState {
  readonly config: Config;
  readonly configHash: string;
  readonly configFile: string | undefined;
  /** Unix seconds when this snapshot was built. */
  readonly loadedAt: number;
  readonly sources: ReadonlyMap<string, TileSource>;
  /** Named composites (`[[composites]]`), by id; ad-hoc `a+b` composites are resolved per request (sources/resolve.ts). */
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

export interface BuildOptions {
  /** The active state: a pool whose settings did not change is carried over from it (connections stay warm). */
  previous?: AppState;
  /** Renew every pool even when its settings are unchanged (reload with `flush=true`). */
  flush?: boolean;
}

/** The database pool a new state uses: the previous state's when its settings are unchanged and no flush is asked. */
async function databasePool(config: Config, options: BuildOptions): Promise<PgPool | undefined> {
  if (!config.postgres) return undefined;
  const old = options.previous?.postgres;
  if (old && !options.flush && old.serves(config.postgres)) return old.share();
  return PgPool.open(config.postgres, workerCount(config.server.workers));
}

export async function buildAppState(loaded: LoadedConfig, options: BuildOptions = {}): Promise<AppState> {
  const { config } = loaded;
  const needsRaster = config.sources.some((s) => s.type === 'cog' || s.type === 'vrt') || (config.postgres?.outdb_rasters.length ?? 0) > 0;
  const raster = needsRaster ? new RasterPool(config) : undefined;
  const results = await Promise.allSettled(
    config.sources.map((s) => (s.type === 'cog' || s.type === 'vrt' ? CogSource.open(s, raster!, config) : openSource(s))),
  );
  const opened = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.all(opened.map((s) => s.close().catch(() => {})));
    await raster?.close();
    const err = failed.reason as unknown;
    throw err instanceof SourceOpenError ? err : new Error(String((err as Error)?.message ?? err));
  }
  let postgres: PgPool | undefined;
  try {
    postgres = await databasePool(config, options);
    if (postgres && config.postgres) {
      const taken = new Set([...opened.map((s) => s.info.id), ...config.composites.map((c) => c.id)]);
      const db = postgres;
      const outdb = raster && ((r: Parameters<typeof OutdbRasterSource.open>[0], fn: Parameters<typeof OutdbRasterSource.open>[1]) => OutdbRasterSource.open(r, fn, db, raster, config));
      opened.push(...(await openDatabaseSources(config.postgres, postgres, taken, outdb)));
    }
  } catch (err) {
    await Promise.all(opened.map((s) => s.close().catch(() => {})));
    await postgres?.close();
    await raster?.close();
    throw err;
  }
  const sources = new Map(opened.map((s) => [s.info.id, s] as const));
  let fonts: FontIndex;
  let styles: ReadonlyMap<string, LoadedStyle>;
  let composites: ReadonlyMap<string, CompositeSource>;
  try {
    composites = buildComposites(config.composites, sources, config);
    fonts = await loadFontIndex(config.fonts);
    const loadedStyles = await loadStyles(config.styles, sources, fonts, composites);
    reportWarnings(loaded.hash, loadedStyles.warnings, (w) => log.warn(w));
    styles = loadedStyles.styles;
  } catch (err) {
    await Promise.all(opened.map((s) => s.close().catch(() => {})));
    await postgres?.close();
    await raster?.close();
    throw err;
  }
  const tileCache = new TileCache(config.cache);
  return {
    config,
    configHash: loaded.hash,
    configFile: loaded.file,
    loadedAt: Math.floor(Date.now() / 1000),
    sources,
    composites,
    styles,
    fonts,
    tileCache,
    postgres,
    raster,
    async close() {
      tileCache.clear();
      await Promise.all([...sources.values()].map((s) => s.close().catch(() => {})));
      await postgres?.close();
      await raster?.close();
    },
  };
}
