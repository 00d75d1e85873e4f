// Surrogate keys: the names an edge cache (Varnish with the xkey vmod) files each tile answer under, so that an
// expiry batch can be purged there in a bounded number of keys, however many tiles it names. Per source the
// product depends on, an answer at z/x/y carries:
//   src:ID            every answer made from the source (a whole-source purge);
//   area:ID/g/x/y     for each grid zoom g (even, 2 to the answer's zoom): the grid tile its area lies in;
//   tile:ID/z/x/y     the tile whose data it read (its own; a hillshade or rendered tile reads its 3x3 neighbours).
// A batch's purge coarsens its tiles to one grid zoom G, chosen as deep as the key budget allows, and names
// `area:` of those grid tiles (every answer at or inside them) plus `tile:` of their ancestors (the answers whose
// area holds them). A million tiles at z18 become a few thousand keys at a coarser G: more is purged than
// changed, never less. The grid has a step of two zooms: an answer at z16 carries 8 area keys per source, not 16;
// a changed tile at an odd zoom (not coarsened) is purged exactly: its own `tile:` key and the areas of its four
// children.
import { ALL_ZOOMS, type ZoomBand } from './area-times.js';
import { keyTile, keyZoom, zoomStart } from './tile-key.js';

/** Zoom step of the grid whose tiles `area:` keys name. */
const GRID_STEP = 2;

/** Keys of a purge before it is coarsened further (a few PURGE requests of a few hundred keys each). */
export const DEFAULT_PURGE_MAX_KEYS = 4096;

/** The Surrogate-Key value of an answer at z/x/y made from `sources`; `neighbours` when it read the tiles around it. */
export function answerKeys(sources: readonly string[], z: number, x: number, y: number, neighbours = false): string {
  // One tile (every source tile answer): one key per grid zoom, built as one string (the fast lane's hot path).
  if (!neighbours) {
    let keys = '';
    for (const id of sources) {
      keys += `${keys ? ' ' : ''}src:${id}`;
      for (let g = GRID_STEP; g <= z; g += GRID_STEP) {
        const shift = 2 ** (z - g);
        keys += ` area:${id}/${g}/${Math.floor(x / shift)}/${Math.floor(y / shift)}`;
      }
      keys += ` tile:${id}/${z}/${x}/${y}`;
    }
    return keys;
  }
  const out: string[] = [];
  const n = 2 ** z;
  for (const id of sources) {
    out.push(`src:${id}`);
    // The tile and its neighbours, wrapping around the antimeridian as the map does; the poles have none beyond.
    const tiles: [number, number][] = [];
    for (let dy = -1; dy <= 1; dy++) for (let dx = -1; dx <= 1; dx++) if (y + dy >= 0 && y + dy < n) tiles.push([(x + dx + n) % n, y + dy]);
    for (let g = GRID_STEP; g <= z; g += GRID_STEP) {
      const shift = 2 ** (z - g);
      const seen = new Set<string>();
      for (const [tx, ty] of tiles) {
        const key = `area:${id}/${g}/${Math.floor(tx / shift)}/${Math.floor(ty / shift)}`;
        if (!seen.has(key)) out.push(key);
        seen.add(key);
      }
    }
    for (const [tx, ty] of tiles) out.push(`tile:${id}/${z}/${tx}/${ty}`);
  }
  return out.join(' ');
}

/** The ancestor at zoom `to` of a key of zoom `from` (Z-order: a tile's descendants at a zoom are consecutive). */
function ancestorKey(key: number, from: number, to: number): number {
  return zoomStart(to) + Math.floor((key - zoomStart(from)) / 4 ** (from - to));
}

/**
 * The area cells (tiles coarsened to grid zoom `g`) and their strict ancestors at zooms the band reaches, as tile
 * keys; undefined once more than `limit` keys are needed. Worked in key space: sorted keys come zoom by zoom and
 * keep each cell's tiles together, so most tiles are told apart from the cell before them without a set lookup.
 */
function purgeAt(sorted: Float64Array, g: number, band: ZoomBand, limit: number): { areas: Set<number>; ancestors: Set<number> } | undefined {
  const areas = new Set<number>();
  const ancestors = new Set<number>();
  /** The cells met so far (on the grid or not). */
  const seen = new Set<number>();
  let last = -1;
  let z = 0;
  let next = zoomStart(1);
  for (let i = 0; i < sorted.length; i++) {
    const key = sorted[i];
    while (key >= next) next = zoomStart(++z + 1);
    const cz = Math.min(g, z);
    const cell = ancestorKey(key, z, cz);
    if (cell === last || seen.has(cell)) continue;
    last = cell;
    seen.add(cell);
    if (cz % GRID_STEP === 0) areas.add(cell);
    else {
      // A tile off the grid (odd zoom): its own answer by its `tile:` key, everything inside it by the areas of
      // its four children (on the grid), so that it is purged exactly rather than with its grid parent's area.
      if (cz >= band.min) ancestors.add(cell);
      const first = zoomStart(cz + 1) + (cell - zoomStart(cz)) * 4;
      for (let c = 0; c < 4; c++) areas.add(first + c);
    }
    // An answer at a zoom the batch does not reach is not stale: its `tile:` key is not purged.
    for (let az = cz - 1; az >= band.min; az--) {
      const a = ancestorKey(cell, cz, az);
      if (ancestors.has(a)) break;
      ancestors.add(a);
    }
    if (areas.size + ancestors.size > limit) return undefined;
  }
  return { areas, ancestors };
}

const spell = (k: number) => keyTile(k).join('/');

/**
 * The keys that purge every answer of `source` a batch's tiles (ascending tile keys, tile-key.ts) reach, at most
 * `maxKeys` of them (at least one: `src:ID` purges the whole source).
 */
export function purgeKeys(source: string, sortedTiles: Float64Array, band: ZoomBand = ALL_ZOOMS, maxKeys = DEFAULT_PURGE_MAX_KEYS): string[] {
  const whole = [`src:${source}`];
  if (sortedTiles.length === 0) return [];
  // Key 0 is tile 0/0/0, the whole world.
  if (sortedTiles[0] === 0 || maxKeys < 2) return whole;
  const deepest = keyZoom(sortedTiles[sortedTiles.length - 1]);
  for (let g = deepest + (deepest % GRID_STEP); g >= GRID_STEP; g -= GRID_STEP) {
    const found = purgeAt(sortedTiles, g, band, maxKeys);
    if (!found) continue;
    return [...[...found.areas].map((c) => `area:${source}/${spell(c)}`), ...[...found.ancestors].map((a) => `tile:${source}/${spell(a)}`)];
  }
  return whole;
}
