// The expiry index in one process (BENCH=expire-index): what BENCH=live's `list` part costs each process of the
// server, without the server. The same 1,000,000-line list (bench/live-list.ts) is read as the admin listener
// reads it, applied to a fresh index, and the process's memory is printed after each step (a full GC first, so
// the figures are what is kept, not garbage): heap used, external and array buffers, RSS; then the index's own
// bytes, and the time of a lookup (what every cached answer pays once expiries exist) at the zooms a map asks,
// inside the listed area and outside it.
//
// Environment: LIVE_LIST_LINES (1000000), EXPIRE_LOOKUPS (200000), BENCH_BROWSE_SEED (1).
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { readExpireList } from '../src/expire/expire-list.js';
import { Expiries } from '../src/expire/expiries.js';
import { CITY_TILE } from '../test/helpers/city-features.js';
import { seededRandom } from './k6/browse-scenario.js';
import { envNumber, fmt, table } from './lib.js';
import { expireList } from './live-list.js';

const LINES = envNumber('LIVE_LIST_LINES', 1_000_000);
const LOOKUPS = envNumber('EXPIRE_LOOKUPS', 200_000);
const SEED = envNumber('BENCH_BROWSE_SEED', 1);

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

const rows: string[][] = [['step', 'heap used MB', 'external MB', 'array buffers MB', 'RSS MB']];
function memory(step: string): void {
  gc();
  const m = process.memoryUsage();
  rows.push([step, fmt(m.heapUsed / 1e6, 1), fmt(m.external / 1e6, 1), fmt(m.arrayBuffers / 1e6, 1), fmt(m.rss / 1e6, 1)]);
}

const list = expireList(LINES, SEED);
const index = new Expiries();
memory('the list as bytes (the request body)');

/** The body as the HTTP server hands it over: 64 KB chunks. */
async function* chunks(): AsyncGenerator<Buffer> {
  for (let i = 0; i < list.length; i += 65_536) yield list.subarray(i, i + 65_536);
}

let t = performance.now();
const read = await readExpireList(chunks());
if (!read.ok) throw new Error(`line ${read.line}: ${read.problem}`);
const readMs = performance.now() - t;
memory(`read: ${fmt(read.tiles.length)} tile keys`);
t = performance.now();
index.apply({ id: 'bench', at: Date.now(), sources: ['s'], tiles: read.tiles, band: { min: 0, max: Infinity }, input: 'list' });
const applyMs = performance.now() - t;
memory('applied (the keys still held)');
read.tiles = new Float64Array(0);
memory('applied, the keys dropped');

console.log(`expire list: ${fmt(LINES)} lines, ${fmt(list.length / 1e6, 1)} MB; read in ${fmt(readMs)} ms, applied in ${fmt(applyMs)} ms`);
console.log(table(rows));
console.log(`index: ${fmt(index.tiles)} entries, ${fmt(index.bytes / 1e6, 1)} MB (${fmt(index.bytes / Math.max(1, index.tiles), 2)} bytes an entry)`);

// Lookups: tiles of the listed city area at z10-z18, of the world at z0-z18, and low zooms (z0-z9) anywhere.
const rnd = seededRandom(SEED + 1);
const probe = (kind: string): [number, number, number] => {
  if (kind === 'world') {
    const z = Math.floor(rnd() * 19);
    return [z, Math.floor(rnd() * 2 ** z), Math.floor(rnd() * 2 ** z)];
  }
  if (kind === 'low') {
    const z = Math.floor(rnd() * 10);
    return [z, Math.floor(rnd() * 2 ** z), Math.floor(rnd() * 2 ** z)];
  }
  const z = 10 + Math.floor(rnd() * 9);
  const f = 2 ** (z - 13);
  const span = Math.max(1, Math.floor(48 * f));
  return [z, Math.floor((CITY_TILE.x - 24) * f) + Math.floor(rnd() * span), Math.floor((CITY_TILE.y - 24) * f) + Math.floor(rnd() * span)];
};
const lookupRows: string[][] = [['tiles asked', 'lookups', 'stale share', 'us per lookup']];
for (const kind of ['city', 'world', 'low']) {
  const probes = Array.from({ length: LOOKUPS }, () => probe(kind));
  let stale = 0;
  for (let round = 0; round < 2; round++) {
    // The first round warms the code up; the second is timed.
    stale = 0;
    t = performance.now();
    for (const [z, x, y] of probes) if (index.expiredAt(['s'], z, x, y) > 0) stale++;
  }
  const us = ((performance.now() - t) * 1000) / probes.length;
  lookupRows.push([kind === 'city' ? 'city area, z10-z18' : kind === 'world' ? 'world, z0-z18' : 'world, z0-z9', fmt(probes.length), `${fmt((100 * stale) / probes.length, 1)} %`, fmt(us, 2)]);
}
console.log(table(lookupRows));
