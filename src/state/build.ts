// Builds an AppState from a loaded configuration: opens every source, builds the named composites, lists the
// fonts, loads the styles. Any failure closes what was opened and throws, so a reload keeps the old state.
import type { LoadedConfig } from '../config/load.js';
import { log } from '../log.js';
import { openSource } from '../sources/open.js';
import { SourceOpenError } from '../sources/source.js';
import type { CompositeSource } from '../sources/composite.js';
import { buildComposites } from '../sources/resolve.js';
import { loadFontIndex, type FontIndex } from '../styles/fonts.js';
import type { LoadedStyle } from '../styles/loaded-style.js';
import { loadStyles, reportWarnings } from '../styles/registry.js';
import { TileCache } from '../tiles/tile-cache.js';
import type { AppState } from './app-state.js';

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
