// A file's property value as a tile can carry it (PropertyValue). MVT has no nulls, lists or objects: absent and
// null values are left out, nested values become JSON text, 64-bit integers numbers (decimal text beyond 2^53,
// as the GeoJSON output does), dates ISO 8601 text. Binary values have no faithful form and are left out.
import type { PropertyValue } from './reader.js';

export function propertyValue(v: unknown): PropertyValue | undefined {
  if (v === null || v === undefined) return undefined;
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      return Number.isFinite(v) ? v : String(v);
    case 'bigint':
      return v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v.toString();
    default:
      if (v instanceof Date) return Number.isNaN(v.getTime()) ? undefined : v.toISOString();
      if (v instanceof Uint8Array) return undefined;
      return JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
  }
}

/** A feature id from a column value: a non-negative integer that a double holds exactly, else none. */
export function featureId(v: unknown): number | undefined {
  const n = typeof v === 'bigint' ? (v >= 0n && v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : undefined) : v;
  return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? n : undefined;
}

/** The column that gives feature ids: an integer column named `fid`, else one named `id` (any case). */
export function idColumn(integerColumns: readonly string[]): string | undefined {
  const lower = (name: string) => integerColumns.find((c) => c.toLowerCase() === name);
  return lower('fid') ?? lower('id');
}
