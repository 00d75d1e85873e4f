// AppState: an immutable snapshot of everything a request needs, built from one configuration.
// A reload builds a new snapshot beside the old one and swaps a single reference (see state/holder.ts);
// requests keep the snapshot they started with.
import type { LoadedConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { openSource } from '../sources/open.js';
import { SourceOpenError, type TileSource } from '../sources/source.js';
import { TileCache } from '../tiles/tile-cache.js';

export interface AppState {
  readonly config: Config;
  readonly configHash: string;
  readonly configFile: string | undefined;
  /** Unix seconds when this snapshot was built. */
  readonly loadedAt: number;
  readonly sources: ReadonlyMap<string, TileSource>;
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
  const tileCache = new TileCache(config.cache);
  return {
    config,
    configHash: loaded.hash,
    configFile: loaded.file,
    loadedAt: Math.floor(Date.now() / 1000),
    sources,
    tileCache,
    async close() {
      tileCache.clear();
      await Promise.all([...sources.values()].map((s) => s.close().catch(() => {})));
    },
  };
}
