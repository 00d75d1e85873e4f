// Bulk frames (render.bulk_metatile, src/render/service.ts): `tileserver-ts seed` draws its tiles in large frames
// and cuts them. Three tiles of one 8x8 block at z7 (256 px tiles, so an 8x8 frame is 2112 px and cheap) are seeded
// with bulk_metatile 4 and 8, and with 8 under a bulk_max_frame too small for it; the frames drawn are read from the
// seed's debug lines (4x4, 8x8, and 2x2 with the limit said once), and every seeded tile agrees with the live
// route's within the render tests' tolerance. One server (the live route) and one browser per seed.
// A frame the GL stack cannot draw: 512 px tiles make the 8x8 frame 4160 px, and the seed's Chromium runs on the egl
// stack with ANGLE's own workaround that caps WebGL's textures at 4096 (limitWebglMaxTextureSizeTo4096, which ANGLE
// applies to some drivers), passed through a render.chromium_path wrapper: WebGL then gives the map a 4096 px
// drawing buffer, the frame fails for real, and its tiles are drawn in 4x4 and 2x2 frames.
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { findChromium } from '../src/render/backends/chromium.js';
import { tempDir } from './helpers/foundation.js';
import { assertRendersAgree, decode } from './helpers/render.js';
import { fixture, runCli, startServer, writeTempConfig, type TestServer } from './helpers/server.js';

const WORLD = fixture('world/natural-earth-z0-6.pmtiles');
const work = tempDir('tsts-seed-frames-');
/**
 * Three tiles of the 8x8 block x 64-71, y 40-47 at z7: two opposite corners and one inside, so a frame over the
 * block's tiles asked for is 8x8, or with 4x4 blocks a 4x4 (the first two share one) and a lone tile's 2x2.
 */
const TILES: [number, number, number][] = [
  [7, 64, 40],
  [7, 67, 43],
  [7, 71, 47],
];

/** A GeoJSON area of points at the tiles' centres: the seed covers exactly those tiles. */
function area(): string {
  const lonLat = ([z, x, y]: [number, number, number]) => {
    const n = 2 ** z;
    const lon = ((x + 0.5) / n) * 360 - 180;
    const lat = (Math.atan(Math.sinh(Math.PI * (1 - (2 * (y + 0.5)) / n))) * 180) / Math.PI;
    return [lon, lat];
  };
  const file = path.join(work, 'area.geojson');
  writeFileSync(file, JSON.stringify({ type: 'MultiPoint', coordinates: TILES.map(lonLat) }));
  return file;
}

const toml = (render: string, cacheDir: string) => `[[sources]]
id = "world"
type = "pmtiles"
path = "${WORLD}"
[render]
pool_size = 1
${render}
[cache]
dir = "${cacheDir}"
`;

interface Seeded {
  /** The archive's tiles by "z/x/y". */
  tiles: Map<string, Buffer>;
  /** The seed's JSON log lines. */
  log: { msg: string; frame?: string; asked?: string; drawn?: string; err?: string; bulk_frames?: Record<string, number> }[];
}

async function seed(name: string, render: string, tileSize: 256 | 512 = 256): Promise<Seeded> {
  const out = path.join(work, `${name}.mbtiles`);
  const config = writeTempConfig(toml(render, path.join(work, `${name}-cache`)));
  const r = await runCli(['seed', '--config', config, '--style', 'world', '--tile-size', String(tileSize), '--geojson', area(), '--zoom', '7', '--out', out], { LOG_LEVEL: 'debug' }, 240_000);
  assert.equal(r.code, 0, r.stderr.slice(-2000));
  const db = new Database(out, { readonly: true });
  try {
    const rows = db.prepare('SELECT zoom_level AS z, tile_column AS x, tile_row AS row, tile_data AS data FROM tiles').all() as { z: number; x: number; row: number; data: Buffer }[];
    const tiles = new Map(rows.map((t) => [`${t.z}/${t.x}/${2 ** t.z - 1 - t.row}`, t.data]));
    const log = r.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Seeded['log'][number]);
    return { tiles, log };
  } finally {
    db.close();
  }
}

const framesOf = (s: Seeded) => s.log.filter((l) => l.msg === 'bulk frame').map((l) => l.frame);

describe('seed: bulk frames', () => {
  let server: TestServer;
  before(async () => {
    // The live route with the server's own cache and default (adaptive) metatiles: what a person is served.
    server = await startServer({ toml: toml('', path.join(work, 'server-cache')), timeoutMs: 120_000 });
  });
  after(async () => {
    await server?.stop();
  });

  /** Every tile of the area seeded, each agreeing with the live route's render of it. */
  async function agreesWithLive(s: Seeded, name: string, tileSize: 256 | 512 = 256): Promise<void> {
    assert.deepEqual([...s.tiles.keys()].sort(), TILES.map((t) => t.join('/')).sort(), `${name}: the tiles of the area`);
    for (const [z, x, y] of TILES) {
      const res = await fetch(`${server.url}/styles/world/${tileSize === 256 ? '256/' : ''}${z}/${x}/${y}.png`, { signal: AbortSignal.timeout(120_000) });
      assert.equal(res.status, 200);
      const live = await decode(Buffer.from(await res.arrayBuffer()));
      assertRendersAgree(`${name} ${z}/${x}/${y}`, live, await decode(s.tiles.get(`${z}/${x}/${y}`)!));
    }
  }

  test('bulk_metatile = 8: the block\'s tiles are one 8x8 frame, cut into the live route\'s tiles', { timeout: 300_000 }, async () => {
    const s = await seed('eight', 'bulk_metatile = 8');
    assert.deepEqual(framesOf(s), ['8x8']);
    await agreesWithLive(s, '8x8');
  });

  test('bulk_metatile = 4: a 4x4 frame for the two tiles of one 4x4 block, a 2x2 for the lone one', { timeout: 300_000 }, async () => {
    const s = await seed('four', 'bulk_metatile = 4');
    assert.deepEqual(framesOf(s).sort(), ['2x2', '4x4']);
    await agreesWithLive(s, '4x4');
  });

  test('a bulk frame past bulk_max_frame is drawn in smaller blocks (said once), and the area still seeds', { timeout: 300_000 }, async () => {
    // 8x8 of 256 px with the 32 px buffer is 2112 px, 4x4 1088, 2x2 576: only 2x2 blocks fit 600.
    const s = await seed('limited', 'bulk_metatile = 8\nbulk_max_frame = 600');
    const said = s.log.filter((l) => l.msg.startsWith('bulk frames of this tile size pass the frame limit'));
    assert.deepEqual(said.map((l) => [l.asked, l.drawn]), [['8x8', '2x2']]);
    assert.deepEqual(framesOf(s), ['2x2', '2x2', '2x2']);
    await agreesWithLive(s, 'limited to 2x2');
  });

  test('a bulk frame the GL stack cannot draw fails, is counted, and its tiles are seeded in smaller frames', { timeout: 300_000 }, async () => {
    const chromium = findChromium();
    assert.ok(chromium, 'no Chromium executable');
    // The operator's way to give the browser a switch: a wrapper as render.chromium_path (exec keeps the marker
    // switch on the browser's own command line, so its processes are found and ended as usual).
    const wrapper = path.join(work, 'chromium-texture-4096');
    writeFileSync(wrapper, `#!/bin/sh\nexec ${JSON.stringify(chromium)} --enable-angle-features=limitWebglMaxTextureSizeTo4096 "$@"\n`);
    chmodSync(wrapper, 0o755);
    // 8x8 of 512 px tiles with the 32 px buffer is 4160 px: within bulk_max_frame (8192), past the capped 4096.
    const s = await seed('capped', `bulk_metatile = 8\ngl = "egl"\nchromium_path = "${wrapper}"`, 512);
    const failed = s.log.filter((l) => l.msg.startsWith('bulk frame failed'));
    assert.deepEqual(failed.map((l) => l.frame), ['8x8'], JSON.stringify(failed));
    // The failure is the stack's: WebGL gave the map a smaller drawing buffer than the frame asked for.
    assert.match(failed[0].err ?? '', /canvas is 4096x4096, expected 4160x4160/);
    // Its waiters asked again in 4x4 blocks: the two tiles of one block in a 4x4 frame, the lone one in its 2x2.
    assert.deepEqual(framesOf(s).sort(), ['2x2', '4x4']);
    // The counts render_bulk_frames_total keeps (the seed says them at its end).
    const summary = s.log.find((l) => l.bulk_frames !== undefined);
    assert.deepEqual(summary?.bulk_frames, { drawn: 2, smaller: 0, failed: 1 });
    await agreesWithLive(s, 'after the failed 8x8 frame', 512);
  });
});
