// Which OGC API collections have features, and what each reads. A `[[postgres.tables]]` source's collection reads
// its table; a data-file source's collection reads its layer when it has one; a data-file source of several layers
// (a GeoPackage of several feature tables) keeps its own collection for its tiles, and each layer is a collection
// of its own, `{source}:{layer}` (layer-ids.ts), with the items, queryables and filters a one-layer source has.
import type { TileSource } from '../sources/source.js';
import { FileSource } from '../sources/files/source.js';
import { PgTableSource } from '../sources/postgres/table.js';
import { layerCollectionId, splitLayerCollectionId } from './layer-ids.js';

/** A collection with features: its id and title, and the table or the file layer its items come from. */
export type FeatureCollectionOf =
  | { kind: 'table'; id: string; title: string; source: PgTableSource }
  | { kind: 'file'; id: string; title: string; source: FileSource; layer: string };

/** A collection reading a layer of a data file. */
export type FileCollection = Extract<FeatureCollectionOf, { kind: 'file' }>;

/** Whether a file source's layers are collections of their own (it has several). */
export const hasLayerCollections = (s: TileSource): s is FileSource => s instanceof FileSource && s.layers.length > 1;

/** The features of a source's own collection: a table's, a one-layer file's; undefined for every other source. */
export function ownFeatures(s: TileSource): FeatureCollectionOf | undefined {
  if (s instanceof PgTableSource) return { kind: 'table', id: s.info.id, title: s.info.name, source: s };
  if (s instanceof FileSource && s.layers.length === 1) return { kind: 'file', id: s.info.id, title: s.info.name, source: s, layer: s.layers[0].name };
  return undefined;
}

/** The collection of one layer of a file source of several layers. */
const layerCollection = (s: FileSource, layer: string): FileCollection => ({ kind: 'file', id: layerCollectionId(s.info.id, layer), title: `${s.info.name}: ${layer}`, source: s, layer });

/** The layer collections of a source, in the order of its layers (tiles' order); none unless it has several. */
export function layerCollections(s: TileSource): FileCollection[] {
  return hasLayerCollections(s) ? s.layers.map((l) => layerCollection(s, l.name)) : [];
}

/** Whether a source offers features in some collection (the Features conformance classes are declared then). */
export const offersFeatures = (s: TileSource): boolean => s instanceof PgTableSource || s instanceof FileSource;

/**
 * What a `{source}:{layer}` id names: the layer's collection; `{ source }` alone when the source exists but has no
 * such layer collection (no such layer, or one layer, whose features are the source's own collection); undefined
 * when the id is not a layer collection's or its source does not exist. `sourceOf` looks a source id up.
 */
export function findLayerCollection(id: string, sourceOf: (id: string) => TileSource | undefined): { found: FileCollection } | { source: TileSource } | undefined {
  const parts = splitLayerCollectionId(id);
  if (!parts) return undefined;
  const s = sourceOf(parts.source);
  if (!s) return undefined;
  if (hasLayerCollections(s) && s.layers.some((l) => l.name === parts.layer)) return { found: layerCollection(s, parts.layer) };
  return { source: s };
}

/** The ids of the collections whose features may be written (`writable` tables; docs/editing.md). */
export function writableCollections(state: { sources: ReadonlyMap<string, TileSource> }): string[] {
  return [...state.sources.values()].filter((s) => s instanceof PgTableSource && s.features.edit !== undefined).map((s) => s.info.id);
}
