// `[terrain]`: limits of the elevation API and the encoding of hillshade tiles.
import * as v from 'valibot';
import { section } from './section.js';

/** `[terrain]`: limits of the elevation API (docs/terrain.md). */
export const TerrainSchema = v.object({
  /** Points one batch request may ask for. */
  max_points: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000_000)), 10_000),
  /** Samples one profile may ask for. */
  max_profile_samples: v.optional(v.pipe(v.number(), v.integer(), v.minValue(2), v.maxValue(1_000_000)), 10_000),
  /** Longest profile line, in kilometres along the ground. */
  max_profile_km: v.optional(v.pipe(v.number(), v.minValue(0.001), v.maxValue(40_075)), 1000),
  /** zlib level of hillshade PNGs (0-9): shaded relief is smooth, and level 1 costs half of level 3 for about a tenth more bytes. */
  png_compression: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(9)), 1),
});

export const terrain = section(v.optional(TerrainSchema, {}));
