// Feature writes (BENCH=edits make bench): the targets of issue 48's first part (docs/editing.md).
//
// The Dortmund city's buildings (bench/live-city.ts) in a throwaway PostGIS, served as a `writable` table with a
// tile cache. EDITS_CLIENTS (8) editors, each in a loop for EDITS_SECONDS (30): pick a random building, GET it (its
// colour and ETag), PATCH its colour to colour + 1 with If-Match. Printed: p50/p95 per write, writes/s, the 412s,
// and lost updates, checked exactly: each building's final colour must be its first one plus the number of 2xx
// writes it got (an update lost to another would leave it short), and every 412 must have been a real conflict
// (the ETag it answers differs from the one sent). Meanwhile one user watches edits appear: every
// EDITS_WATCH_MS (500) a building is edited and its z16 vector tile (cached, as browsing leaves it) asked for every
// 25 ms until it shows the new colour: the time from the write's answer to that tile, p50/p95/max (target p95
// under 2 s). The tile is the vector tile renderers draw from; its expiry is the one every rendered product follows.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { hashKey } from '../src/auth/keys.js';
import { startServer } from '../test/helpers/server.js';
import { get as getTile, readMvt } from '../test/helpers/vector-tiles.js';
import { BUILDINGS, startCity } from './live-city.js';
import { envNumber, fmt, table } from './lib.js';

const CLIENTS = envNumber('EDITS_CLIENTS', 8);
const SECONDS = envNumber('EDITS_SECONDS', 30);
const WATCH_MS = envNumber('EDITS_WATCH_MS', 500);
const KEY = 'tsk_edits-bench-key-000000000000000000000000000';
const auth = { authorization: `Bearer ${KEY}` };

const pct = (xs: number[], p: number) => {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};

function tileOf(lon: number, lat: number, z: number) {
  const n = 2 ** z;
  const r = (lat * Math.PI) / 180;
  return `${z}/${Math.floor(((lon + 180) / 360) * n)}/${Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n)}`;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-bench-edits-'));
  const city = await startCity(dir, false);
  const { rows } = await city.db.sql('SELECT fid, colour, ST_X(ST_PointOnSurface(geometry)) AS lon, ST_Y(ST_PointOnSurface(geometry)) AS lat FROM building');
  const buildings = rows as { fid: number; colour: number; lon: number; lat: number }[];
  const first = new Map(buildings.map((b) => [b.fid, b.colour]));
  const server = await startServer({
    toml: `
[server]
disable_render = true
[auth]
[[auth.keys]]
name = "bench-editor"
hash = "${hashKey(KEY)}"
write = ["${BUILDINGS}"]
[postgres]
connection_string = "${city.db.url}"
pool_size = 12
[[postgres.tables]]
id = "${BUILDINGS}"
table = "building"
id_column = "fid"
writable = true
[cache]
dir = "${path.join(dir, 'cache')}"
`,
  });
  const item = (fid: number) => `${server.url}/ogc/collections/${BUILDINGS}/items/${fid}`;
  /** One edit: read, colour + 1 with If-Match. */
  const edit = async (fid: number): Promise<{ status: number; ms: number; conflictReal: boolean; colour: number }> => {
    const got = await fetch(item(fid));
    const etag = got.headers.get('etag')!;
    const colour = ((await got.json()) as { properties: { colour: number } }).properties.colour;
    const t0 = performance.now();
    const r = await fetch(item(fid), { method: 'PATCH', headers: { ...auth, 'content-type': 'application/merge-patch+json', 'if-match': etag, prefer: 'return=minimal' }, body: JSON.stringify({ properties: { colour: colour + 1 } }) });
    await r.arrayBuffer();
    return { status: r.status, ms: performance.now() - t0, conflictReal: r.status !== 412 || r.headers.get('etag') !== etag, colour: colour + 1 };
  };

  const latencies: number[] = [];
  const wins = new Map<number, number>();
  let conflicts = 0;
  let falseConflicts = 0;
  let errors = 0;
  const end = Date.now() + SECONDS * 1000;
  const editor = async () => {
    while (Date.now() < end) {
      const fid = buildings[Math.floor(Math.random() * buildings.length)].fid;
      const r = await edit(fid);
      if (r.status === 204 || r.status === 200) {
        latencies.push(r.ms);
        wins.set(fid, (wins.get(fid) ?? 0) + 1);
      } else if (r.status === 412) {
        conflicts++;
        if (!r.conflictReal) falseConflicts++;
      } else errors++;
    }
  };
  const visible: number[] = [];
  const watcher = async () => {
    while (Date.now() < end) {
      const b = buildings[Math.floor(Math.random() * buildings.length)];
      const tile = `${server.url}/data/${BUILDINGS}/${tileOf(b.lon, b.lat, 16)}.pbf`;
      await getTile(tile); // cached, as a user browsing there left it
      const r = await edit(b.fid);
      if (r.status !== 204) continue;
      wins.set(b.fid, (wins.get(b.fid) ?? 0) + 1);
      const t0 = performance.now();
      for (;;) {
        const t = await getTile(tile);
        const f = readMvt(t.body).get(BUILDINGS)?.features.find((x) => Number(x.id) === b.fid);
        if (f && Number(f.properties.colour) >= r.colour) break;
        if (performance.now() - t0 > 30_000) break;
        await new Promise((res) => setTimeout(res, 25));
      }
      visible.push(performance.now() - t0);
      await new Promise((res) => setTimeout(res, WATCH_MS));
    }
  };
  const started = performance.now();
  await Promise.all([...Array.from({ length: CLIENTS }, editor), watcher()]);
  const seconds = (performance.now() - started) / 1000;

  const final = new Map(((await city.db.sql('SELECT fid, colour FROM building')).rows as { fid: number; colour: number }[]).map((r) => [r.fid, r.colour]));
  let lost = 0;
  for (const [fid, n] of wins) if (final.get(fid) !== first.get(fid)! + n) lost++;
  for (const [fid, c] of final) if (!wins.has(fid) && c !== first.get(fid)) lost++;

  process.stdout.write(
    table([
      ['clients', 'seconds', 'writes (2xx)', 'writes/s', 'p50 ms', 'p95 ms', '412', '412 not a conflict', 'other errors', 'lost updates'],
      [String(CLIENTS), fmt(seconds, 1), String(latencies.length), fmt(latencies.length / seconds, 1), fmt(pct(latencies, 50), 1), fmt(pct(latencies, 95), 1), String(conflicts), String(falseConflicts), String(errors), String(lost)],
    ]) + '\n',
  );
  process.stdout.write(
    table([
      ['edit -> tile shows it', 'samples', 'p50 ms', 'p95 ms', 'max ms', 'target p95'],
      ['', String(visible.length), fmt(pct(visible, 50), 0), fmt(pct(visible, 95), 0), fmt(Math.max(...visible), 0), '2000 ms'],
    ]) + '\n',
  );
  await server.stop();
  city.db.destroy();
  rmSync(dir, { recursive: true, force: true });
  if (lost > 0 || falseConflicts > 0) {
    process.stderr.write(`edits: ${lost} lost update(s), ${falseConflicts} 412(s) that were no conflict\n`);
    process.exitCode = 1;
  }
}

await main();
