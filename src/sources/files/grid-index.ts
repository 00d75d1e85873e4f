// An in-memory spatial index over the boxes of a layer's features (files read whole, such as GeoJSON): a uniform
// grid over the layer's extent, each feature listed in every cell its box meets. Features whose box spans many
// cells (a country, a long river) are kept in one list checked by box, so no feature is listed more than
// MAX_CELLS_PER_FEATURE times and the index stays a small multiple of the feature count.
import type { Bounds } from '../source.js';

const MAX_CELLS_PER_FEATURE = 64;
/** Cells along each axis at most (the grid is at most 1024 x 1024). */
const MAX_SIDE = 1024;

export class GridIndex {
  private readonly cols: number;
  private readonly rows: number;
  private readonly cellW: number;
  private readonly cellH: number;
  /** Feature numbers per cell, in CSR form: cell c holds items[starts[c] .. starts[c + 1]). */
  private readonly starts: Uint32Array;
  private readonly items: Uint32Array;
  private readonly wide: Uint32Array;
  /** Per feature: west, south, east, north. */
  private readonly boxes: Float64Array;
  private readonly seen: Uint32Array;
  private stamp = 0;

  constructor(
    boxes: Float64Array,
    private readonly extent: Bounds,
  ) {
    const n = boxes.length / 4;
    this.boxes = boxes;
    this.seen = new Uint32Array(n);
    // About four features a cell when they are small and spread evenly.
    const side = Math.max(1, Math.min(MAX_SIDE, Math.ceil(Math.sqrt(n / 4))));
    this.cols = side;
    this.rows = side;
    this.cellW = Math.max((extent[2] - extent[0]) / side, 1e-12);
    this.cellH = Math.max((extent[3] - extent[1]) / side, 1e-12);
    const counts = new Uint32Array(side * side + 1);
    const wide: number[] = [];
    const span = (i: number) => this.cells(boxes[i * 4], boxes[i * 4 + 1], boxes[i * 4 + 2], boxes[i * 4 + 3]);
    for (let i = 0; i < n; i++) {
      const [c0, r0, c1, r1] = span(i);
      if ((c1 - c0 + 1) * (r1 - r0 + 1) > MAX_CELLS_PER_FEATURE) {
        wide.push(i);
        continue;
      }
      for (let r = r0; r <= r1; r++) for (let c = c0; c <= c1; c++) counts[r * side + c + 1]++;
    }
    for (let c = 1; c < counts.length; c++) counts[c] += counts[c - 1];
    this.starts = counts.slice();
    this.items = new Uint32Array(counts[counts.length - 1]);
    const fill = counts;
    for (let i = 0; i < n; i++) {
      const [c0, r0, c1, r1] = span(i);
      if ((c1 - c0 + 1) * (r1 - r0 + 1) > MAX_CELLS_PER_FEATURE) continue;
      for (let r = r0; r <= r1; r++) for (let c = c0; c <= c1; c++) this.items[fill[r * side + c]++] = i;
    }
    this.wide = Uint32Array.from(wide);
  }

  private cells(w: number, s: number, e: number, n: number): [number, number, number, number] {
    const col = (x: number) => Math.min(this.cols - 1, Math.max(0, Math.floor((x - this.extent[0]) / this.cellW)));
    const row = (y: number) => Math.min(this.rows - 1, Math.max(0, Math.floor((y - this.extent[1]) / this.cellH)));
    return [col(w), row(s), col(e), row(n)];
  }

  /** Numbers of the features whose box meets `bbox`, ascending (the file's order). */
  search(bbox: Bounds): number[] {
    const [w, s, e, n] = bbox;
    const b = this.boxes;
    const out: number[] = [];
    const meets = (i: number) => !(b[i * 4] > e || b[i * 4 + 2] < w || b[i * 4 + 1] > n || b[i * 4 + 3] < s);
    if (w > this.extent[2] || e < this.extent[0] || s > this.extent[3] || n < this.extent[1]) return out;
    if (++this.stamp === 0xffffffff) {
      this.seen.fill(0);
      this.stamp = 1;
    }
    const [c0, r0, c1, r1] = this.cells(w, s, e, n);
    for (let r = r0; r <= r1; r++) {
      for (let c = c0; c <= c1; c++) {
        const cell = r * this.cols + c;
        for (let k = this.starts[cell]; k < this.starts[cell + 1]; k++) {
          const i = this.items[k];
          if (this.seen[i] === this.stamp) continue;
          this.seen[i] = this.stamp;
          if (meets(i)) out.push(i);
        }
      }
    }
    for (const i of this.wide) if (meets(i)) out.push(i);
    return out.sort((x, y) => x - y);
  }

  /** Bytes held by the index's arrays. */
  get bytes(): number {
    return this.starts.byteLength + this.items.byteLength + this.wide.byteLength + this.boxes.byteLength + this.seen.byteLength;
  }
}
