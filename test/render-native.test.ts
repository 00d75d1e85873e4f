// The `native` backend's adapter, against a stand-in that follows @maplibre/maplibre-gl-native's documented API
// (the real module cannot be installed here). Resources are answered by the real app in-process, as in the
// server: the style with URLs that lead back to the renderer, TileJSON, tiles, glyphs, sprites.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { loadConfigFile } from '../src/config/load.js';
import { createApp } from '../src/http/app.js';
import { initCodecs } from '../src/tiles/encoding.js';
import { log } from '../src/log.js';
import { backendCandidates } from '../src/render/backends/select.js';
import { loadNativeModule, NativeRenderer } from '../src/render/backends/native.js';
import { RenderError } from '../src/render/renderer.js';
import { inProcessFetcher } from '../src/render/resources.js';
import type { AppState } from '../src/state/app-state.js';
import { buildAppState } from '../src/state/build.js';
import { StateHolder } from '../src/state/holder.js';
import { record } from './helpers/mbgl-stand-in.js';
import { ROOT } from './helpers/server.js';

const STAND_IN = pathToFileURL(path.join(ROOT, 'test/helpers/mbgl-stand-in.ts')).href;
const style = { id: 'osm-liberty', key: 'k1' };
const frame = { width: 512, height: 256, ratio: 2, zoom: 3, center: [10, 50] as [number, number], bearing: 20, pitch: 30 };

describe('native backend adapter (stand-in module)', () => {
  let state: AppState;
  let fetcher: ReturnType<typeof inProcessFetcher>;
  before(async () => {
    await initCodecs();
    state = await buildAppState(loadConfigFile(path.join(ROOT, 'config/default.toml')));
    const { app } = createApp({ holder: new StateHolder(state), version: 'test', runtime: { rendererEnabled: false, renderer: undefined, rendererState: 'unavailable', rendererWanted: false, peersNotReady: [], renderRoutesMounted: false, scrapeListenerActive: false } }, log);
    fetcher = inProcessFetcher((req, env) => app.fetch(req, env));
  });
  after(() => state?.close());

  test('renders through the documented API: camera passed on, ratio on the map, straight-alpha pixels out', async () => {
    const r = await NativeRenderer.start({ maxFrame: 4096, module: STAND_IN });
    const out = await r.render(style, frame, fetcher, Date.now() + 10_000);
    const map = record.maps.at(-1)!;
    assert.equal(map.ratio, 2);
    assert.deepEqual(map.renders[0], { zoom: 3, width: 512, height: 256, center: [10, 50], bearing: 20, pitch: 30 });
    assert.deepEqual([out.width, out.height], [1024, 512]);
    // OSM Liberty's background rgb(239,239,239) at half opacity, premultiplied by the module: straight alpha out.
    assert.deepEqual([...out.data.subarray(0, 4)], [239, 239, 239, 128]);
    // The un-premultiply pass saw the translucency: the encoder must keep the alpha channel.
    assert.equal(out.opaque, false);
    await r.close();
    assert.equal(map.released, true);
  });

  test('a map whose render fails is released and replaced; the failure is a crash (retried by the pool) and is reported', async () => {
    const events: string[] = [];
    const r = await NativeRenderer.start({ maxFrame: 4096, module: STAND_IN, onEvent: (e) => events.push(`${e.kind}: ${e.reason}`) });
    await r.render(style, frame, fetcher, Date.now() + 10_000);
    const failing = record.maps.at(-1)!;
    await assert.rejects(r.render(style, { ...frame, zoom: record.failAtZoom }, fetcher, Date.now() + 10_000), (err: unknown) => err instanceof RenderError && err.reason === 'crash');
    assert.equal(failing.released, true);
    assert.deepEqual(events, ['map-replaced: stand-in render error']);
    // The renderer is still good; the next frame of the style gets a new map.
    assert.equal(r.brokenReason, undefined);
    const out = await r.render(style, frame, fetcher, Date.now() + 10_000);
    assert.deepEqual([out.width, out.height], [1024, 512]);
    assert.notEqual(record.maps.at(-1), failing);
    assert.equal(record.maps.at(-1)!.loads, 1);
    await r.close();
  });

  test('a style is loaded once per style key and ratio, and again when the key changes', async () => {
    const r = await NativeRenderer.start({ maxFrame: 4096, module: STAND_IN });
    const before = record.maps.length;
    await r.render(style, frame, fetcher, Date.now() + 10_000);
    await r.render(style, { ...frame, zoom: 4 }, fetcher, Date.now() + 10_000);
    assert.equal(record.maps.length, before + 1);
    assert.equal(record.maps.at(-1)!.loads, 1);
    await r.render({ ...style, key: 'k2' }, frame, fetcher, Date.now() + 10_000);
    await r.render(style, { ...frame, ratio: 1 }, fetcher, Date.now() + 10_000);
    assert.equal(record.maps.length, before + 3);
    await r.close();
  });

  test('resources come from the service; missing ones are empty, foreign ones refused at once', async () => {
    const r = await NativeRenderer.start({ maxFrame: 4096, module: STAND_IN });
    await r.render(style, frame, fetcher, Date.now() + 10_000);
    const got = record.maps.at(-1)!.got;
    const by = (re: RegExp) => got.find((g) => re.test(g.url));
    const tilejson = by(/\/data\/openmaptiles\.json$/)!;
    assert.equal(tilejson.error, undefined);
    // URLs inside answers lead back to the renderer (its own base), not to a public host.
    const tiles = (JSON.parse(Buffer.from(tilejson.data!).toString()) as { tiles: string[] }).tiles;
    assert.ok(tiles[0].startsWith(tilejson.url.slice(0, tilejson.url.indexOf('/data/'))), tiles[0]);
    assert.ok(by(/\/data\/openmaptiles\/0\/0\/0\.pbf$/)!.bytes > 1000, 'the z0 tile');
    assert.ok(by(/Noto%20Sans%20Regular\/0-255\.pbf$/)!.bytes > 1000, 'a glyph range');
    const missingFont = by(/No%20Such%20Font/)!;
    assert.equal(missingFont.error, undefined);
    assert.equal(missingFont.bytes, 0);
    assert.ok(by(/sprite\.json$/)!.bytes > 1000, 'the sprite index');
    const foreign = by(/elsewhere\.example/)!;
    assert.equal(foreign.error, undefined, 'a foreign image resolves empty (transparent), never waits on a network');
    await r.close();
  });

  test('zoom below 0 (a 256 px tile at z0) is drawn at zoom 0 twice as large and halved', async () => {
    const r = await NativeRenderer.start({ maxFrame: 4096, module: STAND_IN });
    const out = await r.render(style, { ...frame, width: 256, height: 256, ratio: 1, zoom: -1 }, fetcher, Date.now() + 10_000);
    assert.deepEqual(record.maps.at(-1)!.renders.at(-1), { zoom: 0, width: 512, height: 512, center: [10, 50], bearing: 20, pitch: 30 });
    assert.deepEqual([out.width, out.height], [256, 256]);
    await r.close();
  });

  test('a render past its deadline fails with a timeout and marks the renderer broken', async () => {
    const r = await NativeRenderer.start({ maxFrame: 4096, module: STAND_IN });
    await assert.rejects(r.render(style, { ...frame, zoom: record.hangAtZoom }, fetcher, Date.now() + 200), (e: unknown) => e instanceof RenderError && e.reason === 'timeout');
    assert.ok(r.brokenReason);
    await assert.rejects(r.render(style, frame, fetcher, Date.now() + 10_000), (e: unknown) => e instanceof RenderError && e.reason === 'crash');
  });

  test('backend choice: auto prefers native when its module loads, and says why not when it does not', async () => {
    const cfg = { backend: 'auto' } as Parameters<typeof backendCandidates>[0];
    const withNative = await backendCandidates(cfg, () => loadNativeModule(STAND_IN));
    assert.equal(withNative.candidates[0].backend, 'native');
    const without = await backendCandidates(cfg);
    assert.notEqual(without.candidates[0]?.backend, 'native');
    assert.match(without.reasons.join('\n'), /@maplibre\/maplibre-gl-native/);
    const nativeOnly = await backendCandidates({ ...cfg, backend: 'native' });
    assert.deepEqual(nativeOnly.candidates, []);
  });
});
