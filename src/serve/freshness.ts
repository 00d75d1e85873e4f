// Whether a cached product is still fresh after the expiries this process knows (src/expire/): the configured
// sources it is made from (a composite's members, a terrain product's elevation source) and its place, asked with
// the time its making began. One index lookup per question, none at all while no expiry is known: a static
// service pays nothing on its hottest path. Products that read the tiles around their own (a hillshade's or a
// contour's border) ask for their 3x3 neighbourhood: a change just across the edge reaches them too.
import type { AppState } from '../state/app-state.js';
import type { TileCoord } from '../tiles/coords.js';
import { expiries } from '../expire/expiries.js';
import { sourceDependencies } from '../expire/dependencies.js';

export class Freshness {
  private deps: string[] | undefined;
  constructor(
    private readonly state: AppState,
    private readonly sourceId: string,
    private readonly coord: TileCoord,
    private readonly neighbours = false,
  ) {}

  /** The configured sources the product is made from (found once, on the first question). */
  get sources(): string[] {
    return (this.deps ??= sourceDependencies(this.state, this.sourceId));
  }

  /** Whether a product made (begun) at `madeAt` has seen no expiry of its area since. */
  fresh(madeAt: number): boolean {
    if (expiries.empty) return true;
    const { z, x, y } = this.coord;
    if (!this.neighbours) return !expiries.isStale(this.sources, z, x, y, madeAt);
    const n = 2 ** z;
    for (let dy = -1; dy <= 1; dy++) {
      if (y + dy < 0 || y + dy >= n) continue;
      // The antimeridian wraps: the tile west of x = 0 is the last of the row.
      for (let dx = -1; dx <= 1; dx++) if (expiries.isStale(this.sources, z, (x + dx + n) % n, y + dy, madeAt)) return false;
    }
    return true;
  }
}
