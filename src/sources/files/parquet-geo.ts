// What a Parquet file says about its geometry: the GeoParquet `geo` key of its key-value metadata (1.0, 1.1:
// primary column, encoding, CRS as PROJJSON, bbox, and 1.1's bbox covering columns), or, in files without it,
// a column of Parquet's own GEOMETRY/GEOGRAPHY logical type (WKB with the CRS in the type). Only WKB is read:
// GeoParquet 1.1 also allows GeoArrow's native encodings (point, linestring...), which are an open error here.
import type { FileMetaData, SchemaElement } from 'hyparquet';
import type { CrsName } from './crs.js';

export interface GeoColumn {
  /** The WKB column's name (a top-level column). */
  name: string;
  crs: CrsName | undefined;
  /** The extent the metadata declares, in the file's CRS (minx, miny, maxx, maxy). */
  bbox: number[] | undefined;
  /** 1.1 bbox covering: the struct column and its four field names. */
  covering: { column: string; xmin: string; ymin: string; xmax: string; ymax: string } | undefined;
}

interface GeoMetadata {
  version?: string;
  primary_column?: string;
  columns?: Record<string, { encoding?: string; crs?: unknown; bbox?: unknown; covering?: { bbox?: Record<string, unknown> } }>;
}

/** PROJJSON's `id` (or first of `ids`) as an authority and code, and the whole object for GDAL. */
function crsOf(projjson: unknown): CrsName | undefined {
  // Absent or null: OGC:CRS84 (GeoParquet's default).
  if (projjson === undefined || projjson === null) return undefined;
  if (typeof projjson === 'string') return { definition: projjson };
  const o = projjson as { id?: { authority?: string; code?: string | number }; ids?: Array<{ authority?: string; code?: string | number }> };
  const id = o.id ?? o.ids?.[0];
  return { authority: id?.authority, code: id?.code, definition: JSON.stringify(projjson) };
}

/** A covering's field path (["bbox", "xmin"]): the struct column and the field, or undefined if not of that shape. */
function path(v: unknown): [string, string] | undefined {
  return Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' ? [v[0], v[1]] : undefined;
}

/**
 * The geometry column of a Parquet file, or a one-line reason why there is none to read.
 */
export function geoColumn(metadata: FileMetaData): GeoColumn | string {
  const top = topLevel(metadata.schema);
  const raw = metadata.key_value_metadata?.find((kv) => kv.key === 'geo')?.value;
  if (raw !== undefined) {
    let geo: GeoMetadata;
    try {
      geo = JSON.parse(raw) as GeoMetadata;
    } catch {
      return 'its GeoParquet "geo" metadata is not JSON';
    }
    const name = geo.primary_column;
    const column = name !== undefined ? geo.columns?.[name] : undefined;
    if (name === undefined || !column) return 'its GeoParquet "geo" metadata names no primary geometry column';
    if (!top.some((e) => e.name === name && e.type === 'BYTE_ARRAY')) return `its geometry column "${name}" is not a binary column of the file`;
    if ((column.encoding ?? '').toUpperCase() !== 'WKB') return `its geometry column "${name}" is encoded as ${JSON.stringify(column.encoding)}; only WKB is read`;
    const b = column.bbox;
    const bbox = Array.isArray(b) && (b.length === 4 || b.length === 6) && b.every((x) => typeof x === 'number') ? (b.length === 4 ? b : [b[0], b[1], b[3], b[4]]) : undefined;
    const cov = column.covering?.bbox;
    const parts = cov ? (['xmin', 'ymin', 'xmax', 'ymax'] as const).map((k) => path(cov[k])) : [];
    const covering =
      parts.length === 4 && parts.every((p) => p && p[0] === parts[0]![0]) && top.some((e) => e.name === parts[0]![0] && e.num_children)
        ? { column: parts[0]![0], xmin: parts[0]![1], ymin: parts[1]![1], xmax: parts[2]![1], ymax: parts[3]![1] }
        : undefined;
    return { name, crs: crsOf(column.crs), bbox: bbox as number[] | undefined, covering };
  }
  const native = top.find((e) => e.logical_type?.type === 'GEOMETRY' || e.logical_type?.type === 'GEOGRAPHY');
  if (native) {
    const crs = native.logical_type && 'crs' in native.logical_type ? (native.logical_type.crs as string | undefined) : undefined;
    const m = crs ? /^([A-Za-z]+):(\w+)$/.exec(crs) : null;
    return { name: native.name, crs: crs ? (m ? { authority: m[1], code: m[2] } : { definition: crs }) : undefined, bbox: undefined, covering: undefined };
  }
  return 'it has no geometry column (no GeoParquet "geo" metadata and no GEOMETRY column)';
}

/** The schema's top-level elements (children of the root), skipping the descendants of groups. */
export function topLevel(schema: readonly SchemaElement[]): SchemaElement[] {
  const out: SchemaElement[] = [];
  const skip = (i: number): number => {
    let next = i + 1;
    for (let c = 0; c < (schema[i].num_children ?? 0); c++) next = skip(next);
    return next;
  };
  for (let i = 1; i < schema.length; i = skip(i)) out.push(schema[i]);
  return out;
}
