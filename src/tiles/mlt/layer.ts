// The compact MLT encoder's entry point: one self-contained, length-prefixed block per layer (tag, name, extent,
// column metadata, then the columns: id, geometry, properties in order of first appearance).
import { ColumnTypeCode } from '@maplibre/mlt/dist/metadata/tileset/typeMap.js';
import { encodeFieldName, encodeTypeCode } from '@maplibre/mlt/dist/encoding/embeddedTilesetMetadataEncoder.js';
import type { TileLayer, VectorTileData } from '../vector-model.js';
import { encodeGeometryColumn } from './geometry.js';
import { encodeIdColumn } from './ids.js';
import { encodePropertyColumn } from './properties.js';
import { concat, varint } from './streams.js';

/** Block tag of a layer with its metadata embedded. */
const TAG = 1;

function propertyNames(layer: TileLayer): string[] {
  const names = new Set<string>();
  for (const f of layer.features) for (const name in f.properties) names.add(name);
  return [...names];
}

export function encodeLayer(layer: TileLayer): Uint8Array {
  const metadata: Uint8Array[] = [];
  const columns: Uint8Array[] = [];
  const ids = encodeIdColumn(layer.features);
  if (ids) {
    metadata.push(encodeTypeCode(ids.typeCode));
    columns.push(ids.data);
  }
  metadata.push(encodeTypeCode(ColumnTypeCode.GEOMETRY));
  columns.push(encodeGeometryColumn(layer.features));
  for (const name of propertyNames(layer)) {
    const column = encodePropertyColumn(name, layer.features);
    metadata.push(column.metadata);
    columns.push(column.data);
  }
  const body = concat([varint(TAG), encodeFieldName(layer.name), varint(layer.extent), varint(columns.length), ...metadata, ...columns]);
  return concat([varint(body.length), body]);
}

/** Encodes the model as MLT, choosing per column and per stream the smallest encoding the decoders accept. */
export function encodeCompactMlt(tile: VectorTileData): Uint8Array {
  return concat(tile.map(encodeLayer));
}
