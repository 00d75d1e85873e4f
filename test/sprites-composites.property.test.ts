// Property tests of two names read from URL paths: sprite file names (`sprite[@{n}x].{png|json}`,
// parseSpriteFile) and composite ids (`a+b+c`, resolveSource). Sprite names are generated in every form and
// compared with an independent reading; wrong ones are refused naming the scale, the format or the name.
// Composite ids are generated from known, unknown, raster and repeated members; what each one must give (the
// merged TileJSON by rule 1, or 404/400 naming the member) is computed from the members' own TileJSON. Both
// run directly and through one real server.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import type { Config } from '../src/config/schema.js';
import { openSource } from '../src/sources/open.js';
import { CompositeSource } from '../src/sources/composite.js';
import { isProblem, resolveSource } from '../src/serve/resolve.js';
import type { TileSource } from '../src/sources/source.js';
import type { AppState } from '../src/state/app-state.js';
import { parseSpriteFile } from '../src/styles/sprites.js';
import { FormCounter } from './helpers/forms.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';

fc.configureGlobal({ ...fc.readConfigureGlobal(), includeErrorInReport: true });

// ---- Sprite file names -------------------------------------------------------------------------------------------

/** The reading of a sprite name: "sprite", then "@" digits "x" (1..3, leading zeros allowed), then ".png" or ".json". */
function modelSprite(name: string): { scale: number; ext: string } | 'bad-scale' | 'bad-format' | undefined {
  if (!name.startsWith('sprite')) return undefined;
  let rest = name.slice('sprite'.length);
  let scale = 1;
  if (rest.startsWith('@')) {
    const x = rest.indexOf('x');
    const digits = x > 1 ? rest.slice(1, x) : '';
    if (!digits || [...digits].some((c) => c < '0' || c > '9')) return undefined;
    scale = parseInt(digits, 10);
    rest = rest.slice(x + 1);
  }
  if (!rest.startsWith('.') || rest.length < 2 || [...rest.slice(1)].some((c) => !/[A-Za-z0-9]/.test(c))) return undefined;
  if (scale < 1 || scale > 3) return 'bad-scale';
  const ext = rest.slice(1);
  return ext === 'png' || ext === 'json' ? { scale, ext } : 'bad-format';
}

const scalePart = fc.constantFrom<[string, number]>(['', 1], ['@1x', 1], ['@2x', 2], ['@3x', 3], ['@02x', 2], ['@003x', 3]);
const spriteName = fc.tuple(scalePart, fc.constantFrom('png', 'json')).map(([[s, scale], ext]) => ({ text: `sprite${s}.${ext}`, scale, ext }));
const badSprite = fc.oneof(
  fc.tuple(fc.oneof(fc.constantFrom(0, 4, 10, 99), fc.integer({ min: 4, max: 100000 })), fc.constantFrom('png', 'json')).map(([n, e]) => ({ kind: 'scale', text: `sprite@${n}x.${e}`, says: `@${n}x` })),
  fc.tuple(scalePart, fc.stringMatching(/^[A-Za-z0-9]{1,5}$/).filter((e) => e !== 'png' && e !== 'json')).map(([[s], e]) => ({ kind: 'format', text: `sprite${s}.${e}`, says: `".${e}"` })),
  fc.constantFrom('sprites.png', 'sprite@2.png', 'sprite@x.png', 'sprite@2x@2x.png', 'sprite.png.png', 'sprite@-1x.png', 'sprite@2X.png', 'sprite', 'sprite.', 'sprite@2x', 'sprite_2x.png', 'sprite.p-g').map((t) => ({ kind: 'name', text: t, says: `"${t}"` })),
);

describe('sprite file names (properties)', () => {
  test('sprite[@{n}x].{png|json} parses to its scale and format; leading zeros and @1x are the same scales', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(spriteName, ({ text, scale, ext }) => {
        forms.hit(`${scale}-${ext}`);
        assert.deepEqual(parseSpriteFile(text), { ok: true, scale, ext });
        assert.deepEqual(modelSprite(text), { scale, ext });
      }),
      { numRuns: 300 },
    );
    forms.assertEach(['1-png', '2-png', '3-png', '1-json', '2-json', '3-json'], 15);
  });

  test('a wrong scale, format or name is refused, naming it', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(badSprite, ({ kind, text, says }) => {
        forms.hit(kind);
        const r = parseSpriteFile(text);
        assert.ok(!r.ok, `${text} was accepted`);
        assert.ok(r.problem.includes(says), `${text}: "${r.problem}" names ${says}`);
        const m = modelSprite(text);
        assert.equal(kind === 'scale' ? m === 'bad-scale' : kind === 'format' ? m === 'bad-format' : m === undefined, true, `the model reads ${text} as ${kind}`);
      }),
      { numRuns: 600 },
    );
    forms.assertEach(['scale', 'format', 'name'], 100);
  });

  test('any text: never throws, and accepts exactly what the model reads', () => {
    const forms = new FormCounter();
    const text = fc.oneof(fc.string({ maxLength: 16 }), fc.stringMatching(/^sprite(@[0-9x]{0,3}x?)?(\.[a-zA-Z0-9.]{0,5})?$/), spriteName.map((s) => s.text), badSprite.map((b) => b.text));
    fc.assert(
      fc.property(text, (t) => {
        const r = parseSpriteFile(t);
        const m = modelSprite(t);
        forms.hit(r.ok ? 'accepted' : 'refused');
        if (m && typeof m === 'object') assert.deepEqual(r, { ok: true, ...m }, t);
        else assert.ok(!r.ok && r.problem.length > 0, `${JSON.stringify(t)} was accepted`);
      }),
      { numRuns: 3000 },
    );
    forms.assertEach(['accepted', 'refused'], 200);
  });
});

// ---- Composite ids -----------------------------------------------------------------------------------------------

const SOURCES: Record<string, { type: string; file: string; zooms?: [number, number] }> = {
  cities: { type: 'mbtiles', file: fixture('vector/world_cities.mbtiles') },
  // The same archive served at z5-6 only: no zoom in common with the z0-1 planet.
  deep: { type: 'mbtiles', file: fixture('vector/world_cities.mbtiles'), zooms: [5, 6] },
  zoomed: { type: 'mbtiles', file: fixture('vector/zoomed_world_cities.mbtiles') },
  planet: { type: 'pmtiles', file: fixture('vector/omt-planet-z0-1.pmtiles') },
  omtmb: { type: 'mbtiles', file: fixture('vector/omt-z0-1.mbtiles') },
  toner: { type: 'pmtiles', file: fixture('raster/stamen-toner-z0-3.pmtiles') },
};
const NAMED = { basemap: ['planet', 'cities'] };
const UNKNOWN = ['nope', 'Cities', 'cities ', 'a.b', '_x'];

interface Member {
  format: string;
  minzoom: number;
  maxzoom: number;
  layers: string[];
}

/** What an id must give, from the members' own descriptions: a TileJSON's key facts, or the problem. */
function expectedComposite(id: string, members: Map<string, Member>): { status: 200; minzoom: number; maxzoom: number; layers: string[] } | { status: 400 | 404; says: string } {
  const ids = id.split('+');
  const single = members.get(id);
  if (single) return { status: 200, minzoom: single.minzoom, maxzoom: single.maxzoom, layers: single.layers };
  if (ids.length === 1) return { status: 404, says: `no source with id "${id}"` };
  const unknown = ids.filter((m) => !members.has(m));
  if (unknown.length) return { status: 404, says: `no source with id ${unknown.map((u) => `"${u}"`).join(', ')}` };
  const repeated = ids.find((m, i) => ids.indexOf(m) !== i);
  if (repeated) return { status: 400, says: `"${repeated}" is listed more than once` };
  const ms = ids.map((m) => members.get(m)!);
  if (ms.some((m) => m.format !== 'pbf' && m.format !== 'mlt')) return { status: 400, says: 'raster source' };
  const minzoom = Math.max(...ms.map((m) => m.minzoom));
  const maxzoom = Math.min(...ms.map((m) => m.maxzoom));
  if (minzoom > maxzoom) return { status: 400, says: 'zoom ranges do not overlap' };
  return { status: 200, minzoom, maxzoom, layers: [...new Set(ms.flatMap((m) => m.layers))] };
}

/** Ids of 1..4 members: known vector sources, the named composite, the raster source, unknown names, repeats. */
const compositeId = fc
  .array(fc.oneof({ weight: 5, arbitrary: fc.constantFrom('cities', 'zoomed', 'deep', 'planet', 'omtmb', 'basemap') }, { weight: 1, arbitrary: fc.constantFrom('toner') }, { weight: 1, arbitrary: fc.constantFrom(...UNKNOWN) }), {
    minLength: 1,
    maxLength: 4,
  })
  .map((ids) => ids.join('+'));

function formOf(e: ReturnType<typeof expectedComposite>, id: string): string {
  if (e.status === 200) return id.includes('+') ? 'merged' : 'single';
  return e.says.includes('no source') ? 'unknown' : e.says.includes('more than once') ? 'repeated' : e.says.includes('raster') ? 'raster' : 'zoom';
}

describe('composite ids a+b (properties)', () => {
  let server: TestServer;
  let opened: TileSource[] = [];
  let state: AppState;
  const members = new Map<string, Member>();

  before(async () => {
    const toml =
      Object.entries(SOURCES)
        .map(([id, s]) => `[[sources]]\nid = "${id}"\ntype = "${s.type}"\npath = "${s.file}"\n${s.zooms ? `minzoom = ${s.zooms[0]}\nmaxzoom = ${s.zooms[1]}\n` : ''}`)
        .join('') + Object.entries(NAMED).map(([id, ms]) => `[[composites]]\nid = "${id}"\nsources = [${ms.map((m) => `"${m}"`).join(', ')}]\n`).join('');
    const style = `[[styles]]\nid = "liberty"\npath = "${fixture('styles/osm-liberty/style.json')}"\n`;
    server = await startServer({ toml: `${toml}${style}[server]\ndisable_render = true\n` });
    // The members' facts come from each one's own TileJSON (a named composite's too), not from composing.
    for (const id of [...Object.keys(SOURCES), ...Object.keys(NAMED)]) {
      const tj = (await (await fetch(`${server.url}/data/${id}.json`)).json()) as { format: string; minzoom: number; maxzoom: number; vector_layers?: { id: string }[] };
      members.set(id, { format: tj.format, minzoom: tj.minzoom, maxzoom: tj.maxzoom, layers: (tj.vector_layers ?? []).map((l) => l.id) });
    }
    // A state of the same sources, opened here, for direct calls.
    const sources = new Map<string, TileSource>();
    for (const [id, s] of Object.entries(SOURCES)) {
      const src = await openSource({ id, type: s.type as 'mbtiles' | 'pmtiles', path: s.file, ...(s.zooms ? { minzoom: s.zooms[0], maxzoom: s.zooms[1] } : {}) });
      opened.push(src);
      sources.set(id, src);
    }
    const config = {} as Config;
    const composites = new Map(Object.entries(NAMED).map(([id, ms]) => [id, new CompositeSource(id, ms.map((m) => sources.get(m)!), config)]));
    state = { config, sources, composites } as unknown as AppState;
  });
  after(async () => {
    await server?.stop();
    for (const s of opened) await s.close();
    opened = [];
  });

  test('the expectations cover every outcome (the fixtures give a zoom conflict and a raster member)', () => {
    assert.equal(formOf(expectedComposite('cities+toner', members), 'cities+toner'), 'raster');
    assert.equal(formOf(expectedComposite('planet+deep', members), 'planet+deep'), 'zoom');
    assert.deepEqual(members.get('deep'), { ...members.get('cities'), minzoom: 5, maxzoom: 6 });
  });

  test('resolveSource: every generated id gives the composite its members make, or the problem naming the member', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(compositeId, (id) => {
        const e = expectedComposite(id, members);
        forms.hit(formOf(e, id));
        const r = resolveSource(state, id);
        if (e.status === 200) {
          assert.ok(!isProblem(r), `${id}: ${isProblem(r) ? r.detail : ''}`);
          assert.deepEqual([r.info.minzoom, r.info.maxzoom, (r.info.vectorLayers ?? []).map((l) => l.id)], [e.minzoom, e.maxzoom, e.layers], id);
          if (id.includes('+')) assert.equal(r.info.id, id);
        } else {
          assert.ok(isProblem(r), `${id} resolved`);
          assert.equal(r.status, e.status, `${id}: ${r.detail}`);
          assert.ok(r.detail.includes(e.says), `${id}: "${r.detail}" should say ${e.says}`);
        }
      }),
      { numRuns: 1500 },
    );
    forms.assertEach(['single', 'merged', 'unknown', 'repeated', 'raster', 'zoom'], 30);
  });

  test('through the server: TileJSON and a tile of each generated id, or 404/400 problem+json naming the member', async () => {
    const forms = new FormCounter();
    await fc.assert(
      fc.asyncProperty(compositeId, async (id) => {
        const e = expectedComposite(id, members);
        forms.hit(formOf(e, id));
        const res = await fetch(`${server.url}/data/${id}.json`);
        const body = (await res.json()) as Record<string, unknown>;
        assert.equal(res.status, e.status, `${id}: ${JSON.stringify(body).slice(0, 200)}`);
        if (e.status === 200) {
          assert.deepEqual([body.minzoom, body.maxzoom, ((body.vector_layers as { id: string }[] | undefined) ?? []).map((l) => l.id)], [e.minzoom, e.maxzoom, e.layers], id);
          assert.equal((body.tiles as string[])[0], `${server.url}/data/${id}/{z}/{x}/{y}.${members.get(id)?.format ?? 'pbf'}`);
          const tile = await fetch(`${server.url}/data/${id}/${e.minzoom}/0/0.${members.get(id)?.format ?? 'pbf'}`);
          assert.ok([200, 204].includes(tile.status), `${id} tile: ${tile.status}`);
          await tile.arrayBuffer();
        } else {
          assert.equal(res.headers.get('content-type'), 'application/problem+json');
          assert.equal(body.status, e.status);
          assert.ok(String(body.detail).includes(e.says), `${id}: "${body.detail}" should say ${e.says}`);
        }
      }),
      { numRuns: 120 },
    );
    // 120 runs over the server: the rarest kind (zoom) comes 2 to 10 times; every kind must have run.
    forms.assertEach(['single', 'merged', 'unknown', 'repeated', 'raster', 'zoom'], 1);
  });

  test('sprite names through the server: the sheet of that scale, 404 for a scale without files, 400 naming what is wrong', async () => {
    const sprites = path.dirname(fixture('styles/osm-liberty/style.json'));
    const sheet = (scale: number, ext: string) => readFileSync(path.join(sprites, 'sprites', `osm-liberty${scale === 1 ? '' : `@${scale}x`}.${ext}`));
    const forms = new FormCounter();
    await fc.assert(
      fc.asyncProperty(fc.oneof(spriteName.map((s) => ({ ...s, bad: undefined })), badSprite.map((b) => ({ text: b.text, bad: b }))), async ({ text, bad, ...ok }) => {
        const res = await fetch(`${server.url}/styles/liberty/${encodeURIComponent(text)}`);
        const body = Buffer.from(await res.arrayBuffer());
        if (bad) {
          forms.hit(`bad-${bad.kind}`);
          // Names that do not begin with "sprite" are another route's (404); the rest are 400.
          assert.equal(res.status, text.startsWith('sprite') ? 400 : 404, text);
          assert.equal(res.headers.get('content-type'), 'application/problem+json');
          if (res.status === 400) assert.ok(String((JSON.parse(body.toString()) as { detail: string }).detail).includes(bad.says), text);
          return;
        }
        const { scale, ext } = ok as { scale: number; ext: string };
        forms.hit(`scale-${scale}`);
        if (scale === 3) return assert.equal(res.status, 404, text);
        assert.equal(res.status, 200, text);
        assert.equal(res.headers.get('content-type')?.split(';')[0], ext === 'png' ? 'image/png' : 'application/json');
        assert.ok(body.equals(sheet(scale, ext)), `${text}: the bytes of the ${scale}x ${ext}`);
      }),
      { numRuns: 120 },
    );
    forms.assertEach(['scale-1', 'scale-2', 'scale-3', 'bad-scale', 'bad-format', 'bad-name'], 5);
  });
});
