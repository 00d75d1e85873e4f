// Tiles cut below a source's maxzoom for the renderers (src/tiles/overzoom.ts): the clipping itself (exact cases
// and properties), and what the app hands a renderer in-process against what it hands a client.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { loadConfigFile } from '../src/config/load.js';
import { createApp } from '../src/http/app.js';
import { initCodecs } from '../src/tiles/encoding.js';
import { log } from '../src/log.js';
import { inProcessFetcher } from '../src/render/resources.js';
import type { AppState } from '../src/state/app-state.js';
import { buildAppState } from '../src/state/build.js';
import { StateHolder } from '../src/state/holder.js';
import { decodeMvt } from '../src/tiles/mvt-decode.js';
import { cutTile, RENDER_MAXZOOM } from '../src/tiles/overzoom.js';
import { ringArea2, type GeomType, type VectorTileData } from '../src/tiles/vector-model.js';
import { ROOT } from './helpers/server.js';
import { comparableProps, readMvt } from './helpers/vector-tiles.js';
import { storedPmtilesTile, ungzipIfNeeded } from './helpers/foundation.js';

const E = 4096;
const layer = (type: GeomType, geometry: number[][]): VectorTileData => [
  { name: 'l', extent: E, version: 2, features: [{ id: 1, type, geometry, properties: Object.assign(Object.create(null), { k: 'v' }) }] },
];
const only = (t: VectorTileData) => t[0]?.features[0]?.geometry;

describe('cutting a tile out of its ancestor', () => {
  test('a polygon over the whole quadrant fills the cut tile and its buffer, wound as before', () => {
    // Ancestor quadrant (0,0) at dz 1 is [0, 2048]²; this ring covers [0, 3000]² (clockwise in screen terms, MVT exterior).
    const ring = [0, 0, 3000, 0, 3000, 3000, 0, 3000];
    const cut = only(cutTile(layer(3, [ring]), 1, 0, 0, 1 / 32))!;
    assert.equal(cut.length, 1);
    const xs = cut[0].filter((_, i) => i % 2 === 0);
    const ys = cut[0].filter((_, i) => i % 2 === 1);
    assert.deepEqual([Math.min(...xs), Math.max(...xs), Math.min(...ys), Math.max(...ys)], [0, E + 128, 0, E + 128]);
    assert.equal(Math.sign(ringArea2(cut[0])), Math.sign(ringArea2(ring)));
    assert.equal(Math.abs(ringArea2(cut[0])) / 2, (E + 128) ** 2);
  });

  test('a line through the tile is cut at the buffer; one that leaves and comes back gives two pieces', () => {
    // In the child (1,0) at dz 1, ancestor x 2048..4096 maps to 0..4096.
    const through = cutTile(layer(2, [[1000, 1000, 3000, 1000]]), 1, 1, 0, 1 / 32);
    assert.deepEqual(only(through), [[-128, 2000, 1904, 2000]]);
    const zigzag = cutTile(layer(2, [[2500, 100, 1000, 100, 1000, 200, 2500, 200]]), 1, 1, 0, 0);
    assert.deepEqual(only(zigzag), [
      [904, 200, 0, 200],
      [0, 400, 904, 400],
    ]);
  });

  test('what lies wholly outside is dropped: points, lines, rings, then empty features and layers', () => {
    assert.deepEqual(cutTile(layer(1, [[100, 100], [3000, 3000]]), 1, 1, 1, 0)[0].features[0].geometry, [[1904, 1904]]);
    assert.deepEqual(cutTile(layer(2, [[0, 0, 100, 100]]), 2, 3, 3, 1 / 32), []);
    assert.deepEqual(cutTile(layer(3, [[0, 0, 100, 0, 100, 100]]), 2, 3, 3, 1 / 32), []);
  });

  test('ids, properties, layer names and extents are kept', () => {
    const t = cutTile(layer(1, [[10, 10]]), 3, 0, 0, 0);
    assert.equal(t[0].name, 'l');
    assert.equal(t[0].extent, E);
    assert.equal(t[0].features[0].id, 1);
    assert.equal(t[0].features[0].properties.k, 'v');
  });

  const cutArgs = fc.record({ dz: fc.integer({ min: 1, max: 8 }), buffer: fc.constantFrom(0, 1 / 64, 1 / 32) }).chain((a) =>
    fc.record({ dz: fc.constant(a.dz), buffer: fc.constant(a.buffer), cx: fc.integer({ min: 0, max: 2 ** a.dz - 1 }), cy: fc.integer({ min: 0, max: 2 ** a.dz - 1 }) }),
  );
  const coord = fc.integer({ min: -256, max: E + 256 });

  test('property: every cut coordinate is an integer inside the tile plus buffer', () => {
    const lines = fc.array(fc.array(coord, { minLength: 4, maxLength: 40 }).map((a) => (a.length % 2 ? a.slice(1) : a)), { minLength: 1, maxLength: 4 });
    // Parts checked, by geometry type: a cut that always came back empty would check nothing.
    const checked = { 1: 0, 2: 0, 3: 0 };
    fc.assert(
      fc.property(cutArgs, fc.constantFrom<GeomType>(1, 2, 3), lines, ({ dz, cx, cy, buffer }, type, parts) => {
        const b = Math.round(buffer * E);
        for (const part of cutTile(layer(type, parts), dz, cx, cy, buffer)[0]?.features[0].geometry ?? []) {
          assert.ok(part.length >= (type === 1 ? 2 : type === 2 ? 4 : 6));
          checked[type]++;
          for (const c of part) {
            assert.ok(Number.isInteger(c));
            assert.ok(c >= -b && c <= E + b, `${c} outside [${-b}, ${E + b}]`);
          }
        }
      }),
      { numRuns: 300 },
    );
    for (const type of [1, 2, 3] as const) assert.ok(checked[type] >= 5, `${checked[type]} cut parts of type ${type} checked`);
  });

  test('property: an axis-aligned rectangle cuts to exactly its overlap with the tile plus buffer, wound alike', () => {
    let overlapping = 0;
    const rect = fc.tuple(coord, coord, coord, coord).filter(([a, b, c, d]) => a !== c && b !== d);
    fc.assert(
      fc.property(cutArgs, rect, fc.boolean(), ({ dz, cx, cy, buffer }, [a, b, c, d], hole) => {
        const [x0, x1, y0, y1] = [Math.min(a, c), Math.max(a, c), Math.min(b, d), Math.max(b, d)];
        const ring = hole ? [x0, y0, x0, y1, x1, y1, x1, y0] : [x0, y0, x1, y0, x1, y1, x0, y1];
        const k = 2 ** dz;
        const bu = Math.round(buffer * E);
        const ox = Math.max(-bu, x0 * k - cx * E);
        const ex = Math.min(E + bu, x1 * k - cx * E);
        const oy = Math.max(-bu, y0 * k - cy * E);
        const ey = Math.min(E + bu, y1 * k - cy * E);
        const expected = ex > ox && ey > oy ? (ex - ox) * (ey - oy) : 0;
        if (expected) overlapping++;
        const got = cutTile(layer(3, [ring]), dz, cx, cy, buffer)[0]?.features[0].geometry[0];
        const area = got ? ringArea2(got) / 2 : 0;
        assert.equal(Math.abs(area), expected);
        if (got && expected) assert.equal(Math.sign(area), Math.sign(ringArea2(ring)));
      }),
      { numRuns: 500 },
    );
    assert.ok(overlapping >= 20, `${overlapping} of 500 rectangles overlapped the cut tile`);
  });

  test('property: every point of a line that falls inside the tile is in a cut piece', () => {
    let kept = 0;
    fc.assert(
      fc.property(cutArgs, fc.array(coord, { minLength: 4, maxLength: 30 }), ({ dz, cx, cy, buffer }, raw) => {
        const line = raw.length % 2 ? raw.slice(1) : raw;
        const k = 2 ** dz;
        const pieces = cutTile(layer(2, [line]), dz, cx, cy, buffer)[0]?.features[0].geometry ?? [];
        const have = new Set<string>();
        for (const p of pieces) for (let i = 0; i < p.length; i += 2) have.add(`${p[i]},${p[i + 1]}`);
        for (let i = 0; i < line.length; i += 2) {
          const x = line[i] * k - cx * E;
          const y = line[i + 1] * k - cy * E;
          // Vertices strictly inside the tile itself (not on the buffer's edge, where a degenerate piece may be dropped).
          const prev = i >= 2 && line[i - 2] === line[i] && line[i - 1] === line[i + 1];
          if (x > 0 && x < E && y > 0 && y < E && !prev && line.length >= 4) {
            const alone = line.every((c, j) => c === line[j % 2]);
            if (!alone) {
              assert.ok(have.has(`${x},${y}`), `vertex ${x},${y} missing`);
              kept++;
            }
          }
        }
      }),
      { numRuns: 300 },
    );
    // Most random lines miss a small child tile: enough vertices must still have fallen inside to be checked.
    assert.ok(kept >= 10, `${kept} inside vertices checked`);
  });
});

describe('cut tiles through the app: renderers get them, clients do not', () => {
  let state: AppState;
  let app: ReturnType<typeof createApp>['app'];
  let render: ReturnType<typeof inProcessFetcher>;
  const base = 'http://renderer.test/r/key';
  before(async () => {
    await initCodecs();
    state = await buildAppState(loadConfigFile(path.join(ROOT, 'config/default.toml')));
    ({ app } = createApp({ holder: new StateHolder(state), version: 'test', runtime: { rendererEnabled: false, renderer: undefined, rendererState: 'unavailable', rendererWanted: false, peersNotReady: [], renderRoutesMounted: false, scrapeListenerActive: false } }, log));
    render = inProcessFetcher((req, env) => app.fetch(req, env));
  });
  after(() => state?.close());

  test("a renderer's style reaches the render maxzoom; a client's style and TileJSON keep the archive's", async () => {
    const r = await render('/styles/osm-liberty/style.json', base);
    const style = JSON.parse(Buffer.from(r.body).toString()) as { sources: Record<string, { url?: string; maxzoom?: number }> };
    assert.equal(style.sources.openmaptiles.maxzoom, RENDER_MAXZOOM);
    assert.equal(style.sources.openmaptiles.url, `${base}/data/openmaptiles.json`);
    const pub = (await (await app.fetch(new Request('http://client.test/styles/osm-liberty/style.json'))).json()) as typeof style;
    assert.equal(pub.sources.openmaptiles.maxzoom, undefined);
    const tj = (await (await app.fetch(new Request('http://client.test/data/openmaptiles.json'))).json()) as { maxzoom: number };
    assert.equal(tj.maxzoom, 1);
  });

  test('a z7 tile is cut from its z1 ancestor for a renderer, and is 204 for a client', async () => {
    // 7/56/46 is in the Atlantic west of France (its z1 ancestor is 1/0/0); 7/66/43 in the Netherlands (1/1/0).
    const sea = await render('/data/openmaptiles/7/56/46.pbf', base);
    const seaLayers = decodeMvt(sea.body);
    assert.deepEqual(seaLayers.map((l) => l.name), ['water']);
    // The ocean polygon covers the whole cut tile: one ring of the tile plus its buffer.
    assert.equal(Math.abs(ringArea2(seaLayers[0].features[0].geometry[0])) / 2, (4096 + 256) ** 2);
    const r = await render('/data/openmaptiles/7/66/43.pbf', base);
    assert.equal(r.status, 200);
    const got = decodeMvt(r.body);
    // The expectation is read from the stored ancestor with the reference decoder (@mapbox/vector-tile), not
    // with this server's codec or its cutTile: a z7 tile is 2^6 = 64 times the z1 one, 7/66/43 is the ancestor's
    // cell (66 - 64, 43) = (2, 43); a vertex (X, Y) of 1/1/0 lands at (64 X - 2 * 4096, 64 Y - 43 * 4096).
    const stored = ungzipIfNeeded((await storedPmtilesTile(path.join(ROOT, 'fixtures/vector/omt-planet-z0-1.pmtiles'), 1, 1, 0))!);
    const ancestor = readMvt(stored);
    const cut = readMvt(r.body);
    const toChild = ([x, y]: [number, number]): [number, number] => [x * 64 - 2 * E, y * 64 - 43 * E];
    const B = 128; // the render buffer: 1/32 of the extent
    const inside = ([x, y]: [number, number], margin: number) => x >= -B + margin && x <= E + B - margin && y >= -B + margin && y <= E + B - margin;
    let layersChecked = 0;
    let verticesChecked = 0;
    let keptChecked = 0;
    for (const [name, layer] of ancestor) {
      assert.equal(layer.extent, E, name);
      const mapped = layer.features.map((f) => ({ f, pts: f.geometry.flat().map(toChild) }));
      // Wholly inside (one unit clear of the buffer edge, where rounding decides): the cut keeps the feature.
      const whole = mapped.filter((m) => m.pts.every((p) => inside(p, 1)));
      // A feature can only be kept if its bounding box meets the tile plus buffer.
      const meets = mapped.filter((m) => {
        const xs = m.pts.map((p) => p[0]);
        const ys = m.pts.map((p) => p[1]);
        return Math.max(...xs) >= -B && Math.min(...xs) <= E + B && Math.max(...ys) >= -B && Math.min(...ys) <= E + B;
      });
      const got = cut.get(name)?.features ?? [];
      assert.ok(got.length >= whole.length && got.length <= meets.length, `${name}: ${got.length} features, expected ${whole.length}..${meets.length}`);
      if (meets.length === 0) assert.equal(cut.has(name), false, `${name} has nothing here`);
      // Points are not cut: exactly the mapped points inside the tile plus buffer, with their properties.
      const pointsOf = (fs: typeof layer.features, map: (p: [number, number]) => [number, number]) =>
        fs.filter((f) => f.type === 1).flatMap((f) => f.geometry.flat().map(map).filter((p) => inside(p, 0)).map((p) => `${p[0]},${p[1]} ${JSON.stringify(comparableProps(f.properties))}`)).sort();
      assert.deepEqual(pointsOf(got, (p) => p), pointsOf(layer.features, toChild), `${name}: points`);
      // Lines and rings: each vertex of the cut is an ancestor vertex moved to the child, or a new vertex on the
      // edge of the tile plus buffer (where a line was cut); each ancestor vertex well inside is kept.
      const ancestorVertices = new Set(mapped.filter((m) => m.f.type !== 1).flatMap((m) => m.pts.map((p) => `${p[0]},${p[1]}`)));
      const cutVertices = new Set(got.filter((f) => f.type !== 1).flatMap((f) => f.geometry.flat().map(([x, y]) => `${x},${y}`)));
      for (const v of cutVertices) {
        const [x, y] = v.split(',').map(Number);
        const onEdge = x === -B || x === E + B || y === -B || y === E + B;
        assert.ok(onEdge || ancestorVertices.has(v), `${name}: vertex ${v} is neither an ancestor vertex nor on the cut edge`);
        verticesChecked++;
      }
      for (const v of ancestorVertices) {
        if (inside(v.split(',').map(Number) as [number, number], 1)) {
          assert.ok(cutVertices.has(v), `${name}: ancestor vertex ${v} inside the tile is missing`);
          keptChecked++;
        }
      }
      layersChecked++;
    }
    assert.ok(layersChecked >= 4, `${layersChecked} ancestor layers checked`);
    assert.ok(verticesChecked > 20 && keptChecked > 10, `${verticesChecked} cut vertices and ${keptChecked} kept ancestor vertices checked`);
    assert.ok((cut.get('boundary')?.features.length ?? 0) > 0, 'the Dutch borders cross this tile');
    let coords = 0;
    for (const [name, l] of cut) {
      for (const f of l.features) {
        for (const p of f.geometry) {
          for (const [x, y] of p) {
            assert.ok(x >= -B && x <= l.extent + B && y >= -B && y <= l.extent + B, `${name}: ${x},${y}`);
            coords++;
          }
        }
      }
    }
    assert.ok(coords > 0, 'the cut tile has coordinates to check');
    const pub = await app.fetch(new Request('http://client.test/data/openmaptiles/7/66/43.pbf'));
    assert.equal(pub.status, 204);
    // And within the archive's range a renderer gets the stored tile, as a client does.
    const z1 = await render('/data/openmaptiles/1/1/0.pbf', base);
    assert.ok(Buffer.from(z1.body).equals(stored) || ungzipIfNeeded(z1.body).equals(stored), 'the stored z1 tile');
  });
});
