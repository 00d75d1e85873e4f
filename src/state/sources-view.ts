// The sources a state serves: its configured ones, then those of the process's uploads. Uploads belong to the
// process, not to a configuration (src/uploads/registry.ts), so a reload builds a new view over the same
// uploads and every consumer of `state.sources` (TileJSON, tiles, /data.json, composites, spatial) sees them.
import type { TileSource } from '../sources/source.js';

/** Sources kept outside any configuration (the process's uploads), looked up on every request. */
export interface ExtraSources {
  get(id: string): TileSource | undefined;
  /** Every source, in the order they were added. */
  values(): Iterable<TileSource>;
}

export class SourcesView implements ReadonlyMap<string, TileSource> {
  constructor(
    /** The configured sources, which the state owns and closes. */
    readonly configured: ReadonlyMap<string, TileSource>,
    private readonly extra: ExtraSources | undefined,
  ) {}

  get(id: string): TileSource | undefined {
    return this.configured.get(id) ?? this.extra?.get(id);
  }

  has(id: string): boolean {
    return this.get(id) !== undefined;
  }

  get size(): number {
    return this.configured.size + [...(this.extra?.values() ?? [])].length;
  }

  *entries(): MapIterator<[string, TileSource]> {
    yield* this.configured.entries();
    // Upload ids cannot collide with configured ones (config load refuses the prefix), but a view never lists one twice.
    for (const s of this.extra?.values() ?? []) if (!this.configured.has(s.info.id)) yield [s.info.id, s];
  }

  *keys(): MapIterator<string> {
    for (const [id] of this.entries()) yield id;
  }

  *values(): MapIterator<TileSource> {
    for (const [, s] of this.entries()) yield s;
  }

  [Symbol.iterator](): MapIterator<[string, TileSource]> {
    return this.entries();
  }

  forEach(fn: (value: TileSource, key: string, map: ReadonlyMap<string, TileSource>) => void, thisArg?: unknown): void {
    for (const [id, s] of this.entries()) fn.call(thisArg, s, id, this);
  }
}
