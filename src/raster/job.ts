// What the raster pool thread (workers/raster.ts) is asked to do: the messages its pool (src/sources/raster/pool.ts) sends.
import type { DemPointsTask, DemWindowTask } from './dem-read.js';
import type { GdalOptions, RasterTask } from './warp-tile.js';

export type RasterJob =
  | { op: 'tile'; task: RasterTask }
  | { op: 'dem-window'; task: DemWindowTask }
  | { op: 'dem-grid'; task: DemWindowTask }
  | { op: 'dem-points'; task: DemPointsTask }
  | { op: 'describe'; file: string; storage?: GdalOptions }
  | { op: 'crs'; input: string; fallback?: string }
  | { op: 'epsg-axes'; code: number }
  | { op: 'close'; generation: number };
