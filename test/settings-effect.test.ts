// Settings shown to take effect in a running server, with values other than their defaults so that a server
// ignoring them fails: `server.tile_cache_control` on every kind of tile answer (the fast lane's 200, 304 and
// 204, a composite answered through Hono, a rendered tile), `[compression] br_quality` and `zstd_level` (the
// bodies are byte for byte what zlib and libzstd make at that level, and differ from the default level's), the
// metrics' z_bucket boundaries 6/7 and 12/13 end to end, and the sprite URL's `key` without server.public_url.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import zlib from 'node:zlib';
import { fixture, freePort, startServer, type TestServer } from './helpers/server.js';
import { request, tempDir, waitFor } from './helpers/foundation.js';
import { parseScrape } from './helpers/prom-text.js';

const CACHE_CONTROL = 'public, max-age=7, s-maxage=9';
const BR_QUALITY = 11;
const ZSTD_LEVEL = 19;

type Zstd = { init(): Promise<void>; compress(b: Uint8Array, level: number): Uint8Array };
const zstd = createRequire(import.meta.url)('@bokuweb/zstd-wasm') as Zstd;

const brotli = (data: Uint8Array, quality: number) =>
  zlib.brotliCompressSync(data, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: quality, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: data.byteLength } });

describe('settings that must be seen on the wire', () => {
  let server: TestServer;
  let metricsUrl: string;
  before(async () => {
    await zstd.init();
    const metricsPort = await freePort();
    metricsUrl = `http://127.0.0.1:${metricsPort}`;
    server = await startServer({
      toml: `fonts = "${fixture('fonts')}"
[server]
tile_cache_control = "${CACHE_CONTROL}"
[compression]
br_quality = ${BR_QUALITY}
zstd_level = ${ZSTD_LEVEL}
[render]
pool_size = 1
[cache]
dir = "${tempDir('tsts-settings-cache-')}"
[telemetry]
scrape_bind = "127.0.0.1:${metricsPort}"
[[sources]]
id = "cities"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
[[sources]]
id = "zb"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
[[sources]]
id = "openmaptiles"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
[[composites]]
id = "both"
sources = ["openmaptiles", "cities"]
[[styles]]
id = "osm-liberty"
path = "${fixture('styles/osm-liberty/style.json')}"
`,
    });
  });
  after(() => server?.stop());

  test('tile_cache_control on the fast lane\'s 200, 304 and 204', async () => {
    const ok = await request(server.url, '/data/cities/0/0/0.pbf');
    assert.equal(ok.status, 200);
    assert.equal(ok.headers['cache-control'], CACHE_CONTROL);
    const etag = String(ok.headers.etag);
    const notModified = await request(server.url, '/data/cities/0/0/0.pbf', { headers: { 'If-None-Match': etag } });
    assert.equal(notModified.status, 304);
    assert.equal(notModified.headers['cache-control'], CACHE_CONTROL);
    const empty = await request(server.url, '/data/cities/20/0/0.pbf');
    assert.equal(empty.status, 204);
    assert.equal(empty.headers['cache-control'], CACHE_CONTROL);
  });

  test('tile_cache_control on a composite\'s tile, answered through Hono (200 and 304)', async () => {
    for (const path of ['/data/both/0/0/0.pbf', '/data/openmaptiles+cities/0/0/0.pbf']) {
      const ok = await request(server.url, path);
      assert.equal(ok.status, 200, path);
      assert.equal(ok.headers['cache-control'], CACHE_CONTROL, path);
      const again = await request(server.url, path, { headers: { 'If-None-Match': String(ok.headers.etag) } });
      assert.equal(again.status, 304, path);
      assert.equal(again.headers['cache-control'], CACHE_CONTROL, path);
    }
  });

  test('tile_cache_control on a rendered tile', async () => {
    await waitFor('the renderer', async () => ((await request(server.url, '/ready')).status === 200 ? true : undefined), 120_000);
    const tile = await request(server.url, '/styles/osm-liberty/0/0/0.png', { timeoutMs: 120_000 });
    assert.equal(tile.status, 200, tile.body.toString('utf8').slice(0, 300));
    assert.equal(tile.headers['content-type'], 'image/png');
    assert.equal(tile.headers['cache-control'], CACHE_CONTROL);
  });

  test(`br bodies are Brotli at quality ${BR_QUALITY} and zstd bodies Zstandard at level ${ZSTD_LEVEL}, not the defaults`, async () => {
    for (const path of ['/data/cities/0/0/0.pbf', '/data/openmaptiles/0/0/0.pbf', '/data/both/0/0/0.pbf']) {
      const identity = await request(server.url, path);
      assert.equal(identity.headers['content-encoding'], undefined, path);
      const br = await request(server.url, path, { headers: { 'Accept-Encoding': 'br' } });
      assert.equal(br.headers['content-encoding'], 'br', path);
      assert.ok(Buffer.from(brotli(identity.body, BR_QUALITY)).equals(br.body), `${path}: br body is not quality ${BR_QUALITY}`);
      assert.ok(!Buffer.from(brotli(identity.body, 4)).equals(br.body), `${path}: the test cannot tell quality ${BR_QUALITY} from the default`);
      const zs = await request(server.url, path, { headers: { 'Accept-Encoding': 'zstd' } });
      assert.equal(zs.headers['content-encoding'], 'zstd', path);
      assert.ok(Buffer.from(zstd.compress(identity.body, ZSTD_LEVEL)).equals(zs.body), `${path}: zstd body is not level ${ZSTD_LEVEL}`);
      assert.ok(!Buffer.from(zstd.compress(identity.body, 3)).equals(zs.body), `${path}: the test cannot tell level ${ZSTD_LEVEL} from the default`);
    }
  });

  test('z_bucket boundaries end to end: z6 low, z7 and z12 mid, z13 high', async () => {
    for (const z of [6, 7, 7, 12, 12, 12, 13]) assert.equal((await request(server.url, `/data/zb/${z}/0/0.pbf`)).status, 204);
    const text = (await request(metricsUrl, '/metrics')).body.toString('utf8');
    const m = parseScrape(text);
    const count = (bucket: string) => m.find('tile_requests_total', { source: 'zb', z_bucket: bucket }).reduce((a, s) => a + s.value, 0);
    assert.deepEqual([count('low'), count('mid'), count('high')], [1, 5, 1]);
  });

  test('the sprite URL carries the key without server.public_url, and the sprite answers there', async () => {
    const key = 'a&b c';
    const style = JSON.parse((await request(server.url, `/styles/osm-liberty/style.json?key=${encodeURIComponent(key)}`)).body.toString('utf8')) as { sprite: string; glyphs: string };
    assert.equal(style.sprite, `${server.url}/styles/osm-liberty/sprite?key=a%26b%20c`);
    const url = new URL(style.sprite);
    for (const ext of ['.json', '@2x.png']) {
      const res = await request(server.url, `${url.pathname}${ext}${url.search}`);
      assert.equal(res.status, 200, `${url.pathname}${ext}${url.search}`);
    }
  });
});
