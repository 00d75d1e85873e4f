// Merging decoded vector tiles (composite sources): layers of the same name become one layer whose features
// are the members' features in member order. Keys and values need no remapping here: every feature carries
// its own properties, and the MVT encoder builds each layer's key and value tables afresh.
import type { TileFeature, TileLayer, VectorTileData } from './vector-model.js';

/** Coordinates of a feature from a layer of another extent, scaled to `extent`. */
function rescaled(f: TileFeature, factor: number): TileFeature {
  // `|| 0`: Math.round(-0.4) is -0, which no tile format keeps apart from 0.
  return { ...f, geometry: f.geometry.map((part) => part.map((c) => Math.round(c * factor) || 0)) };
}

/**
 * Merges tiles in order. The first layer of a name fixes its position and extent; features of a later
 * layer with another extent are scaled to it, so the merged layer stays one coordinate space.
 */
export function mergeTiles(tiles: readonly VectorTileData[]): VectorTileData {
  const byName = new Map<string, TileLayer>();
  const out: VectorTileData = [];
  for (const tile of tiles) {
    for (const layer of tile) {
      const target = byName.get(layer.name);
      if (!target) {
        const copy: TileLayer = { ...layer, features: [...layer.features] };
        byName.set(layer.name, copy);
        out.push(copy);
      } else if (target.extent === layer.extent) {
        for (const f of layer.features) target.features.push(f);
      } else {
        const factor = target.extent / layer.extent;
        for (const f of layer.features) target.features.push(rescaled(f, factor));
      }
    }
  }
  return out;
}
