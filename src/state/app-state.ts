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
  close(): Promise<void>;
}

export async function buildAppState(loaded: LoadedConfig): Promise<AppState> {
  const { config } = loaded;
  const results = await Promise.allSettled(config.sources.map((s) => openSource(s)));
  const opened = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await Promise.all(opened.map((s) => s.close().catch(() => {})));
    const err = failed.reason as unknown;
    throw err instanceof SourceOpenError ? err : new Error(String((err as Error)?.message ?? err));
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
    async close() {
      tileCache.clear();
      await Promise.all([...sources.values()].map((s) => s.close().catch(() => {})));
    },
  };
}
