// The expire list of BENCH=live's `list` part and of BENCH=expire-index: an osm2pgsql-like list around the bench
// city (test/helpers/city-features.ts), made from a seed, so both benches measure the same tiles.
import { CITY_TILE } from '../test/helpers/city-features.js';
import { seededRandom } from './k6/browse-scenario.js';

/**
 * An osm2pgsql-like list of exactly `lines` lines: every z14-z17 tile under a square of z13 tiles around the city
 * (about 80 % of the lines), and tiles of z14-z17 scattered over the world, one every few lines of the cluster.
 */
export function expireList(lines: number, seed = 1): Buffer {
  const perZ13 = 4 + 16 + 64 + 256;
  const side = Math.max(1, Math.floor(Math.sqrt((0.8 * lines) / perZ13)));
  const x0 = CITY_TILE.x - Math.floor(side / 2);
  const y0 = CITY_TILE.y - Math.floor(side / 2);
  const cluster: string[] = [];
  for (let z = 14; z <= 17 && cluster.length < lines; z++) {
    const f = 2 ** (z - 13);
    for (let y = y0 * f; y < (y0 + side) * f; y++) for (let x = x0 * f; x < (x0 + side) * f; x++) cluster.push(`${z}/${x}/${y}`);
  }
  const rnd = seededRandom(seed);
  const scattered = lines - Math.min(cluster.length, lines);
  const every = scattered > 0 ? Math.max(1, Math.floor(cluster.length / scattered)) : Infinity;
  const out: string[] = [];
  let left = scattered;
  for (let i = 0; i < cluster.length && out.length < lines; i++) {
    out.push(cluster[i]);
    if (left > 0 && i % every === every - 1) {
      const z = 14 + Math.floor(rnd() * 4);
      out.push(`${z}/${Math.floor(rnd() * 2 ** z)}/${Math.floor(rnd() * 2 ** z)}`);
      left--;
    }
  }
  while (out.length < lines) {
    const z = 14 + Math.floor(rnd() * 4);
    out.push(`${z}/${Math.floor(rnd() * 2 ** z)}/${Math.floor(rnd() * 2 ** z)}`);
  }
  return Buffer.from(out.slice(0, lines).join('\n') + '\n');
}
