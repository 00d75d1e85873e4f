// The spatial schema and stats documents of a source (`/api/spatial/schema/{id}`, `/api/spatial/stats/{id}`),
// both read from the source's metadata: no tile is decoded.
import type { SourceInfo } from '../sources/source.js';

export interface SchemaField {
  name: string;
  type: string;
}

export interface SchemaLayer {
  id: string;
  minzoom: number;
  maxzoom: number;
  fields: SchemaField[];
}

// A Map: the declared type is any text of the tileset's metadata, and `constructor` must not find a function.
const TYPE_NAMES = new Map([
  ['string', 'String'],
  ['number', 'Number'],
  ['boolean', 'Boolean'],
]);

/**
 * A field's type as TileJSON metadata gives it. OpenMapTiles-style metadata says "String" / "Number" /
 * "Boolean" (any case: normalised); other tilesets put a description there, which is passed on unchanged.
 */
const fieldType = (declared: string) => TYPE_NAMES.get(declared.toLowerCase()) ?? declared;

export function spatialSchema(info: SourceInfo) {
  const layers: SchemaLayer[] = (info.vectorLayers ?? []).map((l) => ({
    id: l.id,
    minzoom: l.minzoom ?? info.minzoom,
    maxzoom: l.maxzoom ?? info.maxzoom,
    fields: Object.entries(l.fields).map(([name, type]) => ({ name, type: fieldType(type) })),
  }));
  return { source: info.id, format: info.format, minzoom: info.minzoom, maxzoom: info.maxzoom, bounds: info.bounds, layers };
}

export function spatialStats(info: SourceInfo) {
  return {
    source: info.id,
    format: info.format,
    minzoom: info.minzoom,
    maxzoom: info.maxzoom,
    bounds: info.bounds,
    center: info.center,
    layer_count: info.vectorLayers?.length ?? 0,
    name: info.name,
    description: info.description ?? '',
    attribution: info.attribution ?? '',
  };
}
