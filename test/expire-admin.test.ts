// POST /__admin/expire and `tileserver-ts expire` through the real server (one process, its admin listener, its
// metrics listener, a private PostgreSQL for `table=`): each input (a streamed list, a bbox, a GeoJSON geometry,
// a table), the zoom band, the answer's counts, and every bad input. What a request marked is seen in
// `expire_tiles_total{source,input}`: a refused request adds nothing to it (nothing half-applied), an
// accepted one adds its `tiles` to each source it reached. A list of a million lines is accepted streamed; its
// time and the server's memory growth are printed, not asserted (the bench measures them).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { tempDir } from './helpers/foundation.js';
import { startPostgres, type PostgresCluster } from './helpers/postgres.js';
import { parseScrape } from './helpers/prom-text.js';
import { CLI, fixture, freePort, startServer, type TestServer } from './helpers/server.js';
import { markedTiles } from '../src/expire/marked-count.js';
import { tileKey } from '../src/expire/tile-key.js';
import { lonLatToTile } from '../src/tiles/coords.js';

let db: PostgresCluster;
let server: TestServer;
let admin: string;
let scrape: string;

before(async () => {
  db = await startPostgres();
  const adminPort = await freePort();
  const scrapePort = await freePort();
  admin = `http://127.0.0.1:${adminPort}`;
  scrape = `http://127.0.0.1:${scrapePort}/metrics`;
  server = await startServer({
    timeoutMs: 60_000,
    toml: `[server]
admin_bind = "127.0.0.1:${adminPort}"
[telemetry]
scrape_bind = "127.0.0.1:${scrapePort}"
[[sources]]
id = "omt"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
[[sources]]
id = "cities"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
[[composites]]
id = "both"
sources = ["omt", "cities"]
[postgres]
connection_string = "${db.url}"
pool_size = 2
[[postgres.tables]]
id = "roads"
table = "roads"
maxzoom = 14
[[postgres.tables]]
id = "roads_low"
table = "roads"
maxzoom = 10
[[postgres.tables]]
id = "places"
table = "places"
`,
  });
});

after(async () => {
  await server?.stop();
  db?.destroy();
});

/** expire_tiles_total for a source and input (0 before any). */
async function expired(source: string, input: string): Promise<number> {
  const text = await (await fetch(scrape)).text();
  return parseScrape(text).value('expire_tiles_total', { source, input }) ?? 0;
}

async function post(query: string, body: string | Buffer | ReadableStream, type = 'text/plain'): Promise<{ status: number; body: Record<string, unknown>; type: string | null }> {
  const res = await fetch(`${admin}/__admin/expire${query}`, { method: 'POST', headers: { 'content-type': type }, body, duplex: 'half' } as RequestInit);
  return { status: res.status, body: (await res.json()) as Record<string, unknown>, type: res.headers.get('content-type') };
}

const keysOf = (tiles: [number, number, number][]) => Float64Array.from(new Set(tiles.map(([z, x, y]) => tileKey(z, x, y)))).sort();

describe('expire lists', () => {
  test('a list is accepted with its counts, and the counter grows by the tiles marked', async () => {
    const before = await expired('omt', 'list');
    const r = await post('?source=omt', '14/8700/5900\r\n14/8700/5901\n\n10/543/368\n14/8700/5900');
    assert.equal(r.status, 200);
    const expected = markedTiles(keysOf([[14, 8700, 5900], [14, 8700, 5901], [10, 543, 368]]), { min: 0, max: Infinity }, 22);
    assert.deepEqual(r.body, { lines: 4, tiles: expected });
    assert.equal((await expired('omt', 'list')) - before, expected);
  });

  test('the zoom band bounds the count: 0/0/0 over zooms 0..2 is 1 + 4 + 16 tiles', async () => {
    const r = await post('?source=cities&min_zoom=0&max_zoom=2', '0/0/0\n');
    assert.deepEqual([r.status, r.body], [200, { lines: 1, tiles: 21 }]);
    const upper = await post('?source=cities&min_zoom=3&max_zoom=3', '5/1/1\n');
    // Zoom 3 holds the ancestor of 5/1/1 only.
    assert.deepEqual(upper.body, { lines: 1, tiles: 1 });
  });

  test('a composite reaches its members; the count stops at the deepest zoom the source is served at', async () => {
    const omt = await expired('omt', 'list');
    const cities = await expired('cities', 'list');
    const r = await post('?source=both', '22/1/1\n');
    assert.deepEqual(r.body, { lines: 1, tiles: 23 });
    assert.equal((await expired('omt', 'list')) - omt, 23);
    assert.equal((await expired('cities', 'list')) - cities, 23);
    const deep = await post('?source=roads_low', '11/1/1\n');
    assert.equal(deep.status, 400, 'a zoom deeper than the source is served at');
    assert.match(String(deep.body.detail), /^line 1: zoom 11 is deeper than 10/);
  });

  test('table= reaches every source reading the table', async () => {
    const roads = await expired('roads', 'list');
    const low = await expired('roads_low', 'list');
    const r = await post('?table=public.roads&min_zoom=8', '8/136/95\n');
    // Counted to the deepest zoom of the sources reached (14): 1 + 4 + ... + 4^6 tiles from zoom 8 down.
    let sum = 0;
    for (let d = 0; d <= 6; d++) sum += 4 ** d;
    assert.deepEqual([r.status, r.body], [200, { lines: 1, tiles: sum }]);
    assert.equal((await expired('roads', 'list')) - roads, sum);
    assert.equal((await expired('roads_low', 'list')) - low, sum);
    assert.equal((await expired('places', 'list')), 0);
    const none = await post('?table=public.nothing', '1/1/1\n');
    assert.equal(none.status, 404);
    assert.match(String(none.body.detail), /no configured source reads the table "public.nothing"/);
  });

  test('a bad line is refused naming its line number, and nothing of the list is marked', async () => {
    const before = await expired('omt', 'list');
    const cases: [string, number, RegExp][] = [
      ['1/1/1\n2/3/3\nfoo\n4/4/4\n', 3, /^line 3: unexpected character "f"/],
      ['1/1/1\r\n\r\n3/8/1\n', 3, /^line 3: tile 3\/8\/1 is outside zoom 3/],
      ['1/1/1\n25/0/0\n', 2, /^line 2: zoom 25 is deeper than 22/],
      ['1/1\n', 1, /^line 1: expected z\/x\/y/],
      [`1/1/1\n${'9'.repeat(10_000_000)}\n`, 2, /^line 2: a number with more than 8 digits/],
    ];
    for (const [body, line, detail] of cases) {
      const r = await post('?source=omt', body);
      assert.equal(r.status, 400, body.slice(0, 30));
      assert.equal(r.type, 'application/problem+json');
      assert.equal(r.body.line, line);
      assert.match(String(r.body.detail), detail);
    }
    assert.equal(await expired('omt', 'list'), before, 'a refused list marked tiles');
  });

  test('unknown sources, query mistakes, content types, methods and the main port', async () => {
    const unknown = await post('?source=nope', '1/1/1\n');
    assert.deepEqual([unknown.status, unknown.body.detail], [404, 'no configured source has the id "nope"']);
    assert.equal((await post('?source=omt+nope', '1/1/1\n')).status, 404);
    assert.equal((await post('', '1/1/1\n')).status, 400);
    assert.equal((await post('?source=omt&table=roads', '1/1/1\n')).status, 400);
    assert.match(String((await post('?source=omt&max_zoom=25', '1/1/1\n')).body.detail), /^max_zoom: expected a whole number 0\.\.24/);
    assert.match(String((await post('?source=omt&min_zoom=5&max_zoom=4', '1/1/1\n')).body.detail), /min_zoom 5 is above max_zoom 4/);
    assert.match(String((await post('?source=omt&zoom=4', '1/1/1\n')).body.detail), /unknown query parameter "zoom"/);
    const type = await post('?source=omt', '1/1/1\n', 'application/octet-stream');
    assert.equal(type.status, 415);
    const get = await fetch(`${admin}/__admin/expire?source=omt`);
    assert.equal(get.status, 405);
    assert.equal(get.headers.get('allow'), 'POST');
    const main = await fetch(`${server.url}/__admin/expire?source=omt`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '1/1/1\n' });
    assert.equal(main.status, 404);
  });
});

describe('areas (JSON)', () => {
  test('a bbox marks the tiles of its box at its max_zoom; the counter counts them under input="bbox"', async () => {
    const before = await expired('omt', 'bbox');
    // Florence's centre at zoom 14: the tiles between its corners' tiles.
    const r = await post('', JSON.stringify({ source: 'omt', bbox: [11.2, 43.75, 11.27, 43.79], max_zoom: 14 }), 'application/json');
    assert.equal(r.status, 200);
    const nw = lonLatToTile(11.2, 43.79, 14);
    const se = lonLatToTile(11.27, 43.75, 14);
    assert.equal(r.body.lines, (se.x - nw.x + 1) * (se.y - nw.y + 1));
    assert.equal((await expired('omt', 'bbox')) - before, r.body.tiles);
    // 9 tiles at 14 and their distinct ancestors at 0..13.
    assert.ok((r.body.tiles as number) >= 9 + 14 && (r.body.tiles as number) <= 9 + 14 * 4);
  });

  test('a geometry marks only the tiles it touches: a polygon with a hole marks fewer than its box', async () => {
    const box = await post('', JSON.stringify({ source: 'cities', bbox: [0, 0, 10, 10], max_zoom: 8 }), 'application/json');
    const ring = [[0, 0], [10, 0], [10, 10], [0, 10], [0, 0]];
    const hole = [[3, 3], [7, 3], [7, 7], [3, 7], [3, 3]];
    const before = await expired('cities', 'geometry');
    const poly = await post('', JSON.stringify({ source: 'cities', geometry: { type: 'Polygon', coordinates: [ring, hole] }, max_zoom: 8 }), 'application/json');
    assert.equal(poly.status, 200);
    assert.ok((poly.body.lines as number) < (box.body.lines as number), `${poly.body.lines} tiles of the polygon, ${box.body.lines} of its box`);
    assert.equal((await expired('cities', 'geometry')) - before, poly.body.tiles);
    const line = await post('', JSON.stringify({ table: 'places', geometry: { type: 'Feature', properties: {}, geometry: { type: 'LineString', coordinates: [[0, 0], [10, 10]] } }, max_zoom: 8 }), 'application/json');
    assert.equal(line.status, 200);
    assert.ok((line.body.lines as number) < 2 * 8 + 4, `${line.body.lines} tiles along a diagonal of 7 tiles at z8`);
  });

  test('bad JSON bodies are refused naming the member, and mark nothing', async () => {
    const before = await expired('omt', 'bbox');
    const cases: [unknown, RegExp][] = [
      [{ source: 'omt', bbox: [11, 43, 200, 44] }, /^bbox: west and east/],
      [{ source: 'omt', bbox: [11, 44, 12, 43] }, /^bbox: south and north/],
      [{ source: 'omt', bbox: [11, 43, 12] }, /^bbox: expected \[west, south, east, north\]/],
      [{ source: 'omt', geometry: { type: 'Polygon', coordinates: [[[0, 0], [0, 95], [1, 1], [0, 0]]] } }, /^geometry has a position outside/],
      [{ source: 'omt', geometry: { type: 'Circle' } }, /is not a GeoJSON object type/],
      [{ source: 'omt' }, /exactly one of bbox and geometry/],
      [{ source: 'omt', bbox: [0, 0, 1, 1], max_zoom: 30 }, /^max_zoom/],
      [{ source: 'omt', bbox: [0, 0, 1, 1], colour: 'red' }, /unknown member "colour"/],
      [[1, 2], /JSON object/],
    ];
    for (const [doc, detail] of cases) {
      const r = await post('', JSON.stringify(doc), 'application/json');
      assert.equal(r.status, 400, JSON.stringify(doc));
      assert.match(String(r.body.detail), detail);
    }
    assert.equal((await post('', '{"source":', 'application/json')).status, 400);
    assert.equal((await post('?source=omt', '{}', 'application/json')).status, 400);
    assert.equal((await post('', JSON.stringify({ source: 'nope', bbox: [0, 0, 1, 1] }), 'application/json')).status, 404);
    const big = await post('', JSON.stringify({ source: 'omt', geometry: { type: 'MultiPoint', coordinates: Array.from({ length: 300_000 }, () => [1.123456, 2.123456]) } }), 'application/json');
    assert.equal(big.status, 413);
    assert.equal(await expired('omt', 'bbox'), before);
  });
});

describe('the CLI', () => {
  const run = (args: string[], stdin?: string) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const p = spawn(process.execPath, [CLI, 'expire', ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (d) => (stdout += d));
      p.stderr.on('data', (d) => (stderr += d));
      p.on('exit', (code) => resolve({ code, stdout, stderr }));
      p.stdin.end(stdin ?? '');
    });

  test('sends a file and stdin, prints the answer, exits 0; a refusal prints its detail and exits 1', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'expire.list');
    writeFileSync(file, '0/0/0\n1/1/1\n');
    const before = await expired('cities', 'list');
    const fromFile = await run(['--admin', admin, '--source', 'cities', '--max-zoom', '2', file]);
    assert.deepEqual([fromFile.code, JSON.parse(fromFile.stdout)], [0, { lines: 2, tiles: 21 }]);
    assert.equal((await expired('cities', 'list')) - before, 21);
    const fromStdin = await run(['--admin', admin, '--table', 'public.roads', '--min-zoom', '14', '-'], '14/1/1\n14/1/2\n');
    assert.deepEqual([fromStdin.code, JSON.parse(fromStdin.stdout)], [0, { lines: 2, tiles: 2 }]);
    const bad = await run(['--admin', admin, '--source', 'cities'], '1/1/1\n1/2/2\n');
    assert.equal(bad.code, 1);
    assert.equal(bad.stderr, 'tileserver-ts expire: 400: line 2: tile 1/2/2 is outside zoom 1, whose x and y go from 0 to 1\n');
    const missing = await run(['--admin', admin, '--source', 'cities', path.join(dir, 'none')]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, /no such file/);
    const usage = await run(['--source', 'cities']);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /--admin http:\/\/HOST:PORT is required/);
    const down = await run(['--admin', `http://127.0.0.1:${await freePort()}`, '--source', 'cities'], '1/1/1\n');
    assert.equal(down.code, 1);
    assert.match(down.stderr, /cannot reach/);
  });
});

describe('a million lines', () => {
  test('a list of 1,000,000 lines (a dense z14 area and scattered tiles) is accepted streamed', async () => {
    // A city's worth of z14 tiles (600 x 600 around Florence) plus 640,000 lines scattered over zooms 10..17,
    // written the way osm2pgsql does, with repeats: about 16 MB of text.
    const lines: string[] = [];
    const tiles: [number, number, number][] = [];
    for (let y = 5650; y < 6250; y++) for (let x = 8400; x < 9000; x++) tiles.push([14, x, y]);
    let seed = 47;
    const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    while (tiles.length < 1_000_000) {
      const z = 10 + rand(8);
      tiles.push([z, rand(2 ** z), rand(2 ** z)]);
    }
    for (const t of tiles) lines.push(t.join('/'));
    const text = Buffer.from(lines.join('\n') + '\n');
    const expected = markedTiles(keysOf(tiles), { min: 0, max: Infinity }, 22);
    const status = () => readFileSync(`/proc/${server.proc.pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(status())![1]);
    const rssBefore = kb('VmRSS');
    const before = await expired('places', 'list');
    // Sent in 64 KiB pieces through a stream, as the CLI sends a file.
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < text.length; i += 65536) c.enqueue(text.subarray(i, i + 65536));
        c.close();
      },
    });
    const started = performance.now();
    const r = await post('?source=places', body);
    const ms = performance.now() - started;
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.deepEqual(r.body, { lines: 1_000_000, tiles: expected });
    assert.equal((await expired('places', 'list')) - before, expected);
    console.log(`1,000,000 lines (${(text.length / 1e6).toFixed(1)} MB): accepted in ${Math.round(ms)} ms; server RSS ${Math.round(rssBefore / 1024)} MB before, ${Math.round(kb('VmRSS') / 1024)} MB after, peak ${Math.round(kb('VmHWM') / 1024)} MB`);
  });
});
