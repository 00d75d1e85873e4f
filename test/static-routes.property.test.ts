// Property tests of the static-map and social-card routes through one real server (a style with a red box on
// blue, Chromium): every valid request reaches the pixel budget check with the exact size it asked for
// (render.max_pixels is small), invalid ones are 400 problem+json naming the parameter, never 500, and a few
// small images are really rendered and probed where the red box must (or must not) be. The parsers alone:
// static-params.property.test.ts.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { FormCounter } from './helpers/forms.js';
import { decode, distance, pixel, type Rgb } from './helpers/render.js';
import { startServer, type TestServer } from './helpers/server.js';
import { modelNumber, modelSize, modelView, written, side, sizeSegment, sizeMistake, lonText, latText, zoomText, centerView, bboxView, nearView } from './helpers/static-models.js';

fc.configureGlobal({ ...fc.readConfigureGlobal(), includeErrorInReport: true });

const RED: Rgb = [255, 0, 0];
const BLUE: Rgb = [0, 0, 255];
/** The red box of the probe style, in degrees. */
// Wider than tall, so that a point inside read the wrong way round (lat as lon) falls outside.
const BOX = { west: 10, south: 10, east: 80, north: 40 };
const MAX_PIXELS = 64 * 64;

describe('static maps and social cards through the server (properties)', () => {
  let server: TestServer;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-static-prop-'));
    const ring = [[BOX.west, BOX.south], [BOX.east, BOX.south], [BOX.east, BOX.north], [BOX.west, BOX.north], [BOX.west, BOX.south]];
    const style = {
      version: 8,
      sources: { box: { type: 'geojson', data: { type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [ring] } } } },
      layers: [
        { id: 'bg', type: 'background', paint: { 'background-color': '#0000ff' } },
        { id: 'box', type: 'fill', source: 'box', paint: { 'fill-color': '#ff0000', 'fill-antialias': false } },
      ],
    };
    writeFileSync(path.join(dir, 'style.json'), JSON.stringify(style));
    server = await startServer({
      toml: `[[styles]]\nid = "probe"\npath = "${path.join(dir, 'style.json')}"\n[cache]\ndir = "${path.join(dir, 'cache')}"\n[render]\npool_size = 1\npages_per_browser = 1\nmax_pixels = ${MAX_PIXELS}\n`,
      timeoutMs: 60_000,
    });
  });
  after(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  async function get(p: string): Promise<{ status: number; type: string | null; body: Buffer }> {
    const res = await fetch(server.url + p);
    return { status: res.status, type: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()) };
  }

  async function problemOf(p: string): Promise<{ status: number; parameter: string; detail: string }> {
    const r = await get(p);
    assert.equal(r.type, 'application/problem+json', `${p}: ${r.status} ${r.body.toString().slice(0, 200)}`);
    const body = JSON.parse(r.body.toString()) as { type: string; title: string; status: number; detail: string; parameter: string };
    assert.equal(body.status, r.status);
    assert.ok(body.type && body.title && body.detail, p);
    assert.doesNotMatch(body.detail, /\n\s+at |TypeError|RangeError/, 'no internal exception text');
    return { status: r.status, parameter: body.parameter, detail: body.detail };
  }

  /** The budget refusal of a request that parsed: it names the exact size asked for. */
  const budgetDetail = (w: number, h: number, s: number) =>
    `${s === 1 ? `${w}x${h}` : `${w}x${h}@${s}x`} is ${w * h * s * s} device pixels, more than render.max_pixels (${MAX_PIXELS})`;

  const overBudget = sizeSegment.filter(({ w, h, s }) => w.n * h.n * (s === undefined ? 1 : Number(s)) ** 2 > MAX_PIXELS);

  test('valid sizes, views and latlng reach the pixel budget with the size written', async () => {
    const forms = new FormCounter();
    const latlngText = fc.constantFrom<[string | undefined, boolean]>([undefined, false], ['', false], ['false', false], ['0', false], ['true', true], ['1', true]);
    const request = latlngText.chain(([lt, latlng]) =>
      fc.record({
        lt: fc.constant(lt),
        view: fc.oneof(centerView(latlng).map((v) => ({ ...v, form: 'center' })), bboxView(latlng).map((v) => ({ ...v, form: 'bbox' })), fc.constant({ text: 'auto', form: 'auto' })),
        size: overBudget,
      }),
    );
    await fc.assert(
      fc.asyncProperty(request, async ({ lt, view, size }) => {
        forms.hit(view.form);
        forms.hit(`latlng-${lt === undefined ? 'absent' : lt}`);
        const q = lt === undefined ? '' : `?latlng=${lt}`;
        const p = await problemOf(`/styles/probe/static/${view.text}/${size.text}${q}`);
        const s = size.s === undefined ? 1 : Number(size.s);
        assert.deepEqual(p, { status: 400, parameter: 'size', detail: budgetDetail(size.w.n, size.h.n, s) });
      }),
      { numRuns: 120 },
    );
    forms.assertEach(['center', 'bbox', 'auto', 'latlng-absent', 'latlng-', 'latlng-true', 'latlng-1', 'latlng-false', 'latlng-0'], 5);
  });

  test('a wrong size, view or latlng is 400 problem+json naming that parameter, never 500', async () => {
    const forms = new FormCounter();
    const okView = centerView(false).map((v) => v.text);
    const okSize = overBudget.map((s) => s.text);
    const badSize = fc.oneof(
      sizeMistake,
      fc.stringMatching(/^[0-9x@.a-zA-Z]{1,16}$/).filter((s) => !modelSize(s) && s !== '.' && s !== '..').map((text) => ({ part: 'any', text })),
    );
    const badView = nearView.filter((s) => s.length > 0 && s !== '.' && s !== '..' && modelView(s, false) === undefined);
    // Each request gets one part wrong: the part named in the answer is that one (a size wrong as a whole or in
    // one of its parts).
    const wrong = fc.oneof(
      fc.record({ part: fc.constant('view'), view: badView, size: okSize, lt: fc.constant('0') }),
      fc.record({ part: fc.constant('size'), view: okView, bad: badSize, lt: fc.constant('0') }).map((r) => ({ ...r, size: r.bad.text, sizePart: r.bad.part })),
      fc.record({ part: fc.constant('latlng'), view: okView, size: okSize, lt: fc.stringMatching(/^[a-zA-Z0-9]{1,6}$/).filter((s) => !['true', 'false', '1', '0'].includes(s)) }),
    );
    await fc.assert(
      fc.asyncProperty(wrong, async (w) => {
        const { part, view, size, lt } = w;
        const p = await problemOf(`/styles/probe/static/${encodeURIComponent(view)}/${encodeURIComponent(size)}?latlng=${lt}`);
        assert.equal(p.status, 400, `${view}/${size}?latlng=${lt}: ${p.detail}`);
        const sizePart = 'sizePart' in w ? w.sizePart : undefined;
        const expected = part !== 'size' ? [part] : sizePart === 'any' ? ['size', 'width', 'height', 'scale', 'format'] : [sizePart];
        assert.ok(expected.includes(p.parameter), `${part}/${sizePart}: parameter ${p.parameter} (${p.detail})`);
        forms.hit(`${part}:${p.parameter}`);
      }),
      { numRuns: 200 },
    );
    // 200 runs over the server split over seven outcomes, some rare (2 to 10 each): every one must have run.
    forms.assertEach(['view:view', 'size:size', 'size:width', 'size:height', 'size:scale', 'size:format', 'latlng:latlng'], 1);
  });

  test('/og: valid center, zoom, bounds, width and height reach the budget with the size written; wrong ones are named', async () => {
    const forms = new FormCounter();
    const dims = fc.tuple(fc.integer({ min: 1, max: 4096 }), fc.integer({ min: 1, max: 4096 })).filter(([w, h]) => w * h > MAX_PIXELS);
    const valid = fc.record({
      place: fc.oneof(
        fc.record({ lat: latText(85), lon: lonText, zoom: fc.option(zoomText, { nil: undefined }) }).map((c) => ({ form: 'center', q: `center=${c.lat.text},${c.lon.text}${c.zoom ? `&zoom=${c.zoom.text}` : ''}` })),
        bboxView(false).map((b) => ({ form: 'bounds', q: `bounds=${b.text}` })),
      ),
      dims,
    });
    await fc.assert(
      fc.asyncProperty(valid, async ({ place, dims: [w, h] }) => {
        forms.hit(place.form);
        const p = await problemOf(`/og/probe?${place.q}&width=${w}&height=${h}`);
        assert.deepEqual(p, { status: 400, parameter: 'width', detail: budgetDetail(w, h, 1) });
      }),
      { numRuns: 60 },
    );
    // Width, height and format are read first, then bounds or center: each case spells only what it gets wrong.
    const wrong = fc.oneof(
      fc.oneof(written(85.06, 90), written(-90, -85.06)).chain((la) => lonText.map((lo) => ({ part: 'center', q: `center=${la.text},${lo.text}`, names: 'latitude' }))),
      fc.tuple(written(90.001, 500), lonText).map(([la, lo]) => ({ part: 'center', q: `center=${la.text},${lo.text}`, names: `${la.value}` })),
      fc
        .stringMatching(/^[a-z0-9,. -]{1,10}$/)
        .filter((s) => {
          const p = s.split(',');
          return p.length !== 2 || p.some((x) => modelNumber(x) === undefined);
        })
        .map((s) => ({ part: 'center', q: `center=${encodeURIComponent(s)}`, names: s })),
      bboxView(false).map((b) => {
        const v = (b.expected as { bounds: { west: number; south: number; east: number; north: number } }).bounds;
        return { part: 'bounds', q: `bounds=${v.west},${v.north},${v.east},${v.south}`, names: 'south' };
      }),
      centerView(false).map((c) => ({ part: 'bounds', q: `bounds=${c.text.split('@')[0]}`, names: 'minLng,minLat,maxLng,maxLat' })),
      fc.tuple(latText(80), lonText, fc.constantFrom('23', '-1', 'x', '1e1', '')).map(([la, lo, z]) => ({ part: 'zoom', q: `center=${la.text},${lo.text}&zoom=${z}`, names: `"${z}"` })),
      fc.constantFrom('0', '4097', 'big', '-3').map((w) => ({ part: 'width', q: `center=1,1&width=${w}`, names: `"${w}"` })),
      fc.constantFrom('0', '5000', 'tall').map((h) => ({ part: 'height', q: `center=1,1&width=10&height=${h}`, names: `"${h}"` })),
      fc.constant({ part: 'center', q: 'zoom=3', names: 'center=lat,lng' }),
    );
    await fc.assert(
      fc.asyncProperty(wrong, async ({ part, q, names }) => {
        forms.hit(`wrong-${part}`);
        const p = await problemOf(`/og/probe?${q}`);
        assert.equal(p.status, 400, q);
        assert.equal(p.parameter, part, `${q}: ${p.detail}`);
        assert.ok(p.detail.includes(names), `${q}: "${p.detail}" names ${names}`);
      }),
      { numRuns: 80 },
    );
    // 80 runs over the server: the rarest mistake comes once or a few times; every kind must have run.
    forms.assertEach(['center', 'bounds', 'wrong-center', 'wrong-bounds', 'wrong-zoom', 'wrong-width', 'wrong-height'], 1);
  });

  test('small images are rendered where the view puts them: the red box under the centre, or not', async () => {
    const forms = new FormCounter();
    // Points at least 4 degrees inside or outside the box (about 45 px at zoom 3), so the centre pixel is sure.
    const inside = fc.tuple(written(BOX.west + 4, BOX.east - 4, 2), written(BOX.south + 4, BOX.north - 4, 2)).map(([lon, lat]) => ({ lon, lat, red: true }));
    const outside = fc.tuple(written(-170, BOX.west - 4, 2), written(-70, 70, 2)).map(([lon, lat]) => ({ lon, lat, red: false }));
    const render = fc.record({
      where: fc.oneof(inside, outside),
      kind: fc.constantFrom('static-lonlat', 'static-latlng', 'og'),
      size: fc.constantFrom({ text: '32x24.png', w: 32, h: 24, type: 'image/png' }, { text: '16x16@2x.webp', w: 32, h: 32, type: 'image/webp' }, { text: '20x30.jpg', w: 20, h: 30, type: 'image/jpeg' }),
    });
    await fc.assert(
      fc.asyncProperty(render, async ({ where, kind, size }) => {
        const { lon, lat } = where;
        forms.hit(`${kind}-${where.red ? 'in' : 'out'}`);
        const p =
          kind === 'og'
            ? `/og/probe?center=${lat.text},${lon.text}&zoom=3&width=${size.w}&height=${size.h}`
            : kind === 'static-latlng'
              ? `/styles/probe/static/${lat.text},${lon.text},3/${size.text}?latlng=1`
              : `/styles/probe/static/${lon.text},${lat.text},3/${size.text}`;
        const r = await get(p);
        assert.equal(r.status, 200, `${p}: ${r.body.toString().slice(0, 200)}`);
        assert.equal(r.type, kind === 'og' ? 'image/png' : size.type);
        const img = await decode(r.body);
        assert.deepEqual([img.width, img.height], [size.w, size.h], p);
        const c = pixel(img, img.width / 2, img.height / 2);
        assert.ok(distance(c, where.red ? RED : BLUE) < 60, `${p}: centre pixel ${c} should be ${where.red ? 'red' : 'blue'}`);
      }),
      { numRuns: 14 },
    );
    // A bounding box inside the box is red edge to edge; one west of it is blue.
    // Spans of 2..4 degrees at latitudes 16..32: the frame's extension along the box's shorter side (an exact fit
    // fills one axis) stays under 3 degrees, well inside the 4-degree margins.
    const box = fc.tuple(fc.integer({ min: BOX.west + 4, max: BOX.east - 8 }), fc.integer({ min: 16, max: 28 }), fc.integer({ min: 2, max: 4 }), fc.integer({ min: 2, max: 4 }));
    for (const red of [true, false]) {
    await fc.assert(
      fc.asyncProperty(box, async ([w, s, dx, dy]) => {
        forms.hit(red ? 'bbox-in' : 'bbox-out');
        const west = red ? w : w - 100;
        const bbox = `${west},${s},${west + dx},${s + dy}`;
        const r = await get(`/styles/probe/static/${bbox}/24x24.png`);
        assert.equal(r.status, 200, bbox);
        const img = await decode(r.body);
        for (const [x, y] of [[1, 1], [22, 1], [1, 22], [22, 22], [12, 12]]) assert.ok(distance(pixel(img, x, y), red ? RED : BLUE) < 60, `${bbox} at ${x},${y}: ${pixel(img, x, y)}`);
      }),
      { numRuns: 2 },
    );
    }
    forms.assertEach(['bbox-in', 'bbox-out'], 2);
    assert.ok(forms.count('static-lonlat-in') + forms.count('static-latlng-in') + forms.count('og-in') >= 2, 'renders inside the box');
    assert.ok(forms.count('static-lonlat-out') + forms.count('static-latlng-out') + forms.count('og-out') >= 2, 'renders outside the box');
  });
});
