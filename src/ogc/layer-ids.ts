// The collection id of one layer of a multi-layer data-file source (a GeoPackage of several feature tables):
// `{source}:{layer}`, e.g. `city:roads`. Source ids are letters, digits, "_", "-" and "." only
// (src/config/schema.ts; auto-published and uploaded ids are cut to the same set), so an id with a ":" is never a
// source's, and the first ":" ends the source id however the layer (a table name, any text) is spelt. A "." would
// not do: source ids contain dots, and `{dem}.hillshade` already names a terrain product. Kept free of imports:
// the access gate (src/auth/resources.ts) reads collection ids with it before any route runs.

export const LAYER_SEPARATOR = ':';

/** The collection id of `layer` of `source`. */
export function layerCollectionId(source: string, layer: string): string {
  return `${source}${LAYER_SEPARATOR}${layer}`;
}

/** The source and layer a collection id names, or undefined when it is not a layer collection's id. */
export function splitLayerCollectionId(id: string): { source: string; layer: string } | undefined {
  const at = id.indexOf(LAYER_SEPARATOR);
  if (at <= 0 || at === id.length - 1) return undefined;
  return { source: id.slice(0, at), layer: id.slice(at + 1) };
}
