// Builds an AppState from a loaded configuration: opens every source (files, COG/VRT through the raster pool, the
// database's tables and functions through its pool), builds the named composites, lists the fonts, loads the
// styles. Any failure closes what was opened and throws, so a reload keeps the old state.
import type { Config } from '../config/schema.js';
import type { LoadedConfig } from '../config/load.js';
import { workerCount } from '../config/sizing.js';
import { log } from '../log.js';
import { RasterPool } from '../sources/raster/pool.js';
import { learnOwnCrs } from '../sources/postgres/own-crs.js';
import { openSource } from '../sources/open.js';
import { PgPool } from '../sources/postgres/pool.js';
import { openDatabaseSources } from '../sources/postgres/publish.js';
import { CogSource } from '../sources/raster/cog.js';
import { OutdbRasterSource } from '../sources/raster/outdb.js';
import { SourceOpenError } from '../sources/source.js';
import { buildComposites, type CompositeSource } from '../sources/composite.js';
import { loadFontIndex, type FontIndex } from '../styles/fonts.js';
import type { LoadedStyle } from '../styles/loaded-style.js';
import { loadStyles, reportWarnings } from '../styles/registry.js';
import { TileCache } from '../tiles/tile-cache.js';
import type { AppState } from './app-state.js';
import { SourcesView, type ExtraSources } from './sources-view.js';

export interface BuildOptions {
  /** The active state: a pool whose settings did not change is carried over from it (connections stay warm). */
  previous?: AppState;
  /** Renew every pool even when its settings are unchanged (reload with `flush=true`). */
  flush?: boolean;
  /** The process's uploads: served beside the configured sources, owned (and closed) by the process, not the state. */
  uploads?: ExtraSources;
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
  let raster = needsRaster ? new RasterPool(config) : undefined;
  // A data file in a projected CRS has GDAL read it in the raster pool's thread, started for it when no raster
  // source did (files/crs.ts says why never in this one).
  const readCrs = (input: string, fallback?: string) => (raster ??= new RasterPool(config)).readCrs(input, fallback);
  const results = await Promise.allSettled(
    config.sources.map((s) => (s.type === 'cog' || s.type === 'vrt' ? CogSource.open(s, raster!, config) : openSource(s, config.storage, readCrs))),
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
      const pool = raster;
      const outdb = pool && ((r: Parameters<typeof OutdbRasterSource.open>[0], fn: Parameters<typeof OutdbRasterSource.open>[1]) => OutdbRasterSource.open(r, fn, db, pool, config));
      const tables = await openDatabaseSources(config.postgres, postgres, taken, outdb);
      opened.push(...tables);
      await learnOwnCrs(tables, (code) => (raster ??= new RasterPool(config)).epsgAxes(code));
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
    reportWarnings(loaded.hash, [...fonts.warnings, ...loadedStyles.warnings], (w) => log.warn(w));
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
    sources: new SourcesView(sources, options.uploads),
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
