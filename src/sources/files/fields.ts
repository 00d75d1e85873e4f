// Property values and field types shared by the readers that infer them from the features (GeoJSON): nested
// values become JSON text (MVT carries no lists or objects), and a property whose values are of mixed types is a
// String field whose values are all written as text, so that tiles, filters and OGC API - Features see one type.
import type { FieldType, PropertyValue } from './reader.js';

/** A GeoJSON property value as a tile can carry it. */
export function propertyValue(v: unknown): PropertyValue {
  if (v === null || v === undefined) return null;
  if (typeof v === 'string' || typeof v === 'boolean') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? v : null;
  return JSON.stringify(v);
}

const TYPE_OF: Record<string, FieldType> = { string: 'String', number: 'Number', boolean: 'Boolean' };

/** Collects the types seen per property; `fields()` names each property's one type (String when they differ). */
export class FieldTypes {
  /** Per property: the types of its non-null values (empty when every value seen is null). */
  private readonly seen = new Map<string, Set<FieldType>>();

  add(props: Record<string, PropertyValue>): void {
    for (const key in props) {
      let types = this.seen.get(key);
      if (!types) this.seen.set(key, (types = new Set()));
      const v = props[key];
      if (v !== null) types.add(TYPE_OF[typeof v]);
    }
  }

  fields(): Record<string, FieldType> {
    const out: Record<string, FieldType> = {};
    for (const [k, types] of this.seen) Object.defineProperty(out, k, { value: types.size === 1 ? [...types][0] : 'String', enumerable: true, writable: true, configurable: true });
    return out;
  }

  /** Properties whose values must be written as text (their types differ between features). */
  mixed(): string[] {
    return [...this.seen].filter(([, t]) => t.size > 1).map(([k]) => k);
  }
}
