// Property tests of tileserver-gl's static-map grammar as this service reads it (src/render/tileserver-gl-
// grammar.ts, through parseStaticQuery): written paths and markers parse back to what was written, a path's own
// options win over the query's defaults, EPSG:3857 metres (the raw routes) land on the degrees they stand for,
// the JSON body of the POST form reads as its query, and every bad value is a problem naming its parameter,
// never a throw. Icons are placed by their anchor, offset and scale, the corner texts in their corners.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import sharp from 'sharp';
import fc from './helpers/fast-check.js';
import { bodyParams } from '../src/http/routes/static-map.js';
import { parseStaticQuery, parseViewSegment } from '../src/render/static-params.js';
import { plainText } from '../src/render/attribution.js';
import { overlaySvg } from '../src/render/svg.js';
import { parseCssColor } from '../src/render/tileserver-gl-grammar.js';

const query = (values: Record<string, string[]>) => ({ one: (n: string) => values[n]?.[0], all: (n: string) => values[n] ?? [] });
const decimal = (min: number, max: number) => fc.double({ min, max, noNaN: true }).map((v) => Number(v.toFixed(6)) || 0);
const lonLat = fc.tuple(decimal(-180, 180), decimal(-90, 90));
const byte = fc.integer({ min: 0, max: 255 });
/** A CSS colour in one of the written forms, with the channels it stands for. */
const cssColor = fc.oneof(
  fc.tuple(byte, byte, byte).map(([r, g, b]) => ({ text: `#${[r, g, b].map((n) => n.toString(16).padStart(2, '0')).join('')}`, rgba: { r, g, b, a: 1 } })),
  fc.tuple(byte, byte, byte, fc.integer({ min: 0, max: 100 })).map(([r, g, b, a]) => ({ text: `rgba(${r}, ${g},${b}, ${a / 100})`, rgba: { r, g, b, a: a / 100 } })),
  fc.tuple(byte, byte, byte).map(([r, g, b]) => ({ text: `rgb(${r},${g},${b})`, rgba: { r, g, b, a: 1 } })),
  fc.constantFrom({ text: 'red', rgba: { r: 255, g: 0, b: 0, a: 1 } }, { text: 'none', rgba: { r: 0, g: 0, b: 0, a: 0 } }),
);
const width = fc.integer({ min: 0, max: 5000 }).map((v) => v / 10);
const MERCATOR = 20037508.342789244;
const toMetres = ([lon, lat]: [number, number]) => [(lon / 180) * MERCATOR, (Math.log(Math.tan(Math.PI / 4 + (lat * Math.PI) / 360)) * 6378137)];

describe("tileserver-gl's grammar (properties)", () => {
  test('options|points paths parse back; own options win over the query defaults; closed only when the ends meet', () => {
    fc.assert(
      fc.property(
        fc.record({ stroke: fc.option(cssColor, { nil: undefined }), fill: fc.option(cssColor, { nil: undefined }), width: fc.option(width, { nil: undefined }) }),
        fc.record({ stroke: fc.option(cssColor, { nil: undefined }), width: fc.option(width, { nil: undefined }), linecap: fc.constantFrom(undefined, 'butt', 'round', 'square') }),
        fc.array(lonLat, { minLength: 2, maxLength: 10 }),
        fc.boolean(),
        fc.boolean(),
        (own, global, pts, latlng, close) => {
          const points = close ? [...pts, pts[0]] : pts;
          const opts = [own.stroke && `stroke:${own.stroke.text}`, own.fill && `fill:${own.fill.text}`, own.width !== undefined && `width:${own.width}`].filter(Boolean);
          const geometry = points.map(([lon, lat]) => (latlng ? `${lat},${lon}` : `${lon},${lat}`)).join('|');
          const values: Record<string, string[]> = { path: [[...opts, geometry].join('|')], latlng: [String(latlng)] };
          if (global.stroke) values.stroke = [global.stroke.text];
          if (global.width !== undefined) values.width = [String(global.width)];
          if (global.linecap) values.linecap = [global.linecap];
          const r = parseStaticQuery(query(values));
          assert.ok(r.ok, r.ok ? '' : r.problem.detail);
          const [p] = r.value.overlays.paths;
          assert.deepEqual(p.points, points);
          assert.deepEqual(p.stroke, own.stroke?.rgba ?? global.stroke?.rgba ?? { r: 0, g: 64, b: 255, a: 0.7 });
          assert.equal(p.width, own.width ?? global.width ?? 1);
          assert.deepEqual(p.fill, own.fill?.rgba);
          assert.equal(p.cap, global.linecap ?? 'butt');
          assert.equal(p.closed, points[0][0] === points[points.length - 1][0] && points[0][1] === points[points.length - 1][1]);
        },
      ),
    );
  });

  test('borders: the path own border or the query one, a tenth of the width by default', () => {
    const r = parseStaticQuery(query({ path: ['border:white|width:10|0,0|1,1', 'border:red|borderwidth:3|0,0|1,1', '0,0|1,1'], border: ['black'] }));
    assert.ok(r.ok);
    assert.deepEqual(r.value.overlays.paths.map((p) => p.border), [
      { color: { r: 255, g: 255, b: 255, a: 1 }, width: 1 },
      { color: { r: 255, g: 0, b: 0, a: 1 }, width: 3 },
      { color: { r: 0, g: 0, b: 0, a: 1 }, width: 0.1 },
    ]);
  });

  test('lon,lat|icon|options markers parse back', () => {
    fc.assert(
      fc.property(
        lonLat,
        fc.constantFrom('sprite:airport', 'pins/red.png', '/files/pins/red.png', 'https://icons.example.com/a.png'),
        fc.option(fc.integer({ min: 1, max: 99 }).map((v) => v / 10), { nil: undefined }),
        fc.option(fc.tuple(fc.integer({ min: -999, max: 999 }), fc.integer({ min: -999, max: 999 })), { nil: undefined }),
        fc.option(fc.constantFrom('center', 'top', 'bottom-left'), { nil: undefined }),
        (pt, icon, scale, offset, anchor) => {
          const opts = [scale !== undefined && `scale:${scale}`, offset && `offset:${offset.join(',')}`, anchor && `anchor:${anchor}`].filter(Boolean);
          const r = parseStaticQuery(query({ marker: [[`${pt[0]},${pt[1]}`, icon, ...opts].join('|')] }));
          assert.ok(r.ok, r.ok ? '' : r.problem.detail);
          const [m] = r.value.overlays.icons;
          assert.deepEqual(m.point, pt);
          assert.equal(m.scale, scale ?? 1);
          assert.deepEqual(m.offset, offset ?? [0, 0]);
          assert.equal(m.anchor, anchor ?? 'bottom');
          const expected = icon.startsWith('sprite:') ? { type: 'sprite', name: 'airport' } : icon.startsWith('https:') ? { type: 'url', url: new URL(icon) } : { type: 'file', path: 'pins/red.png' };
          assert.deepEqual(m.icon, expected);
        },
      ),
    );
  });

  test('metres of the raw routes land on the degrees they stand for (paths, markers)', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(decimal(-179, 179), decimal(-85, 85)), { minLength: 2, maxLength: 6 }), (pts) => {
        const m = pts.map((p) => toMetres(p).map((v) => v.toFixed(3)).join(','));
        const r = parseStaticQuery(query({ path: [m.join('|')], marker: [`${m[0]}|sprite:x`] }), true);
        assert.ok(r.ok, r.ok ? '' : r.problem.detail);
        r.value.overlays.paths[0].points.forEach(([lon, lat], i) => {
          assert.ok(Math.abs(lon - pts[i][0]) < 1e-6 && Math.abs(lat - pts[i][1]) < 1e-6, `${lon},${lat} vs ${pts[i]}`);
        });
        assert.ok(Math.abs(r.value.overlays.icons[0].point[1] - pts[0][1]) < 1e-6);
      }),
    );
    // The view segment too: a centre and a bounding box in metres.
    fc.assert(
      fc.property(fc.tuple(decimal(-179, 0), decimal(-80, 0)), fc.tuple(decimal(1, 179), decimal(1, 80)), decimal(0, 20), (sw, ne, zoom) => {
        const m = (p: [number, number]) => toMetres(p).map((v) => v.toFixed(4));
        const centre = parseViewSegment(`${m(sw).join(',')},${zoom}`, false, true);
        assert.ok(centre.ok && centre.value.type === 'center');
        assert.ok(Math.abs(centre.value.center[0] - sw[0]) < 1e-6 && Math.abs(centre.value.center[1] - sw[1]) < 1e-6);
        const box = parseViewSegment([...m(sw), ...m(ne)].join(','), false, true);
        assert.ok(box.ok && box.value.type === 'bbox');
        const b = box.value.bounds;
        for (const [got, want] of [[b.west, sw[0]], [b.south, sw[1]], [b.east, ne[0]], [b.north, ne[1]]]) assert.ok(Math.abs(got - want) < 1e-6, `${got} vs ${want}`);
      }),
    );
    const outside = parseStaticQuery(query({ path: ['0,0|30000000,0'] }), true);
    assert.deepEqual(outside.ok ? undefined : outside.problem.parameter, 'path');
  });

  test('the POST body reads as the query with the same values', () => {
    fc.assert(
      fc.property(fc.array(lonLat, { minLength: 2, maxLength: 5 }), width, fc.boolean(), (pts, w, attribution) => {
        const path = `stroke:blue|${pts.map((p) => p.join(',')).join('|')}`;
        const marker = `${pts[0].join(',')}|sprite:a|scale:2`;
        const body = bodyParams({ path: [path], marker, width: w, linejoin: 'round', attribution, watermark: 'Hello' });
        assert.ok(body.ok);
        const fromBody = parseStaticQuery(body.params);
        const fromQuery = parseStaticQuery(query({ path: [path], marker: [marker], width: [String(w)], linejoin: ['round'], attribution: [String(attribution)], watermark: ['Hello'] }));
        assert.deepEqual(fromBody, fromQuery);
        assert.ok(fromQuery.ok && fromQuery.value.attribution === attribution && fromQuery.value.overlays.watermark === 'Hello');
      }),
    );
    assert.deepEqual(bodyParams({ width: [3] }), { ok: false, problem: { parameter: 'width', detail: 'width must be a number' } });
    assert.deepEqual(bodyParams({ attribution: 'no' }).ok, true, 'a string is read as the query would read it');
  });

  test('bad values are problems naming their parameter', () => {
    const cases: [Record<string, string[]>, string, RegExp][] = [
      [{ path: ['colour:red|0,0|1,1'] }, 'path', /path option "colour"/],
      [{ path: ['stroke:#12|0,0|1,1'] }, 'path', /stroke "#12" is not a colour/],
      [{ path: ['width:600|0,0|1,1'] }, 'path', /width "600" is not a number 0\.\.500/],
      [{ path: ['stroke:red|'] }, 'path', /has no points/],
      [{ path: ['0,0'] }, 'path', /a path needs at least 2/],
      [{ stroke: ['rgba(1,2,3)'] }, 'stroke', /not a colour/],
      [{ fill: ['bluish'] }, 'fill', /not a colour/],
      [{ width: ['-1'] }, 'width', /0\.\.500/],
      [{ borderwidth: ['x'] }, 'borderwidth', /0\.\.250/],
      [{ linecap: ['flat'] }, 'linecap', /butt, round, square/],
      [{ linejoin: ['sharp'] }, 'linejoin', /miter, round, bevel/],
      [{ marker: ['0,0'] }, 'marker', /is not \{lon\},\{lat\}\|\{icon\}/],
      [{ marker: ['0,0|a.png|scale:0'] }, 'marker', /scale "0"/],
      [{ marker: ['0,0|a.png|offset:1,2,3'] }, 'marker', /offset "1,2,3"/],
      [{ marker: ['0,0|a.png|anchor:middle'] }, 'marker', /anchor "middle"/],
      [{ marker: ['0,0|a.png|size:2'] }, 'marker', /marker option "size"/],
      [{ marker: ['0,0|../secret.png'] }, 'marker', /not a file inside the files directory/],
      [{ marker: ['0,0|data:image/png;base64,AAAA'] }, 'marker', /not sprite:\{name\}, an http\(s\) URL/],
      [{ marker: ['0,200|a.png'] }, 'marker', /latitude 200/],
      [{ attribution: ['maybe'] }, 'attribution', /true or false/],
      [{ marker: Array.from({ length: 21 }, (_, i) => `0,0|sprite:icon${i}`) }, 'marker', /21 different icons; a map may show at most 20/],
      [{ watermark: ['x'.repeat(201)] }, 'watermark', /at most 200/],
    ];
    for (const [values, parameter, detail] of cases) {
      const r = parseStaticQuery(query(values));
      assert.equal(r.ok, false, JSON.stringify(values));
      assert.equal(r.ok ? '' : r.problem.parameter, parameter, JSON.stringify(values));
      assert.match(r.ok ? '' : r.problem.detail, detail);
    }
  });

  test('CSS colours outside the forms are refused; garbage values never throw', () => {
    for (const bad of ['#12345', 'rgb(256,0,0)', 'rgba(0,0,0,1.5)', 'rgb(0,0,0,0.5)', 'constructor', '']) assert.equal(parseCssColor(bad), undefined, bad);
    fc.assert(
      fc.property(fc.constantFrom('path', 'marker', 'fill', 'stroke', 'width', 'linecap', 'border', 'watermark'), fc.string({ maxLength: 40 }), fc.boolean(), (name, value, metres) => {
        const r = parseStaticQuery(query({ [name]: [value] }), metres);
        if (!r.ok) assert.equal(r.problem.parameter, name);
      }),
    );
  });
});

describe('icon placement and corner texts (drawn by librsvg through sharp, as the service composites them)', () => {
  const cam = { center: [0, 0] as [number, number], zoom: 0, bearing: 0, pitch: 0, width: 200, height: 160 };
  /** The box [x0, y0, x1, y1) of pixels with alpha over half in an SVG drawn by sharp. */
  async function opaqueBox(svg: string): Promise<number[] | undefined> {
    const { data, info } = await sharp(Buffer.from(svg)).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    let box: number[] | undefined;
    for (let y = 0; y < info.height; y++)
      for (let x = 0; x < info.width; x++)
        if (data[(y * info.width + x) * 4 + 3] > 128) box = box ? [Math.min(box[0], x), Math.min(box[1], y), Math.max(box[2], x + 1), Math.max(box[3], y + 1)] : [x, y, x + 1, y + 1];
    return box;
  }

  test('an icon stands with its anchor on its point, moved by offset x scale, at every ratio', async () => {
    const png = await sharp({ create: { width: 8, height: 6, channels: 4, background: { r: 0, g: 0, b: 0, alpha: 1 } } }).png().toBuffer();
    const anchors: Record<string, [number, number]> = { bottom: [0.5, 1], center: [0.5, 0.5], 'top-left': [0, 0], right: [1, 0.5] };
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...Object.keys(anchors)), fc.constantFrom(1, 2, 3), fc.integer({ min: -10, max: 10 }), fc.integer({ min: -10, max: 10 }), fc.constantFrom(1, 2), async (anchor, scale, ox, oy, ratio) => {
        const r = parseStaticQuery(query({ marker: [`0,0|sprite:dot|scale:${scale}|offset:${ox},${oy}|anchor:${anchor}`] }));
        assert.ok(r.ok);
        const svg = overlaySvg({ ...r.value.overlays, iconImages: new Map([['sprite:dot', { png, width: 8, height: 6 }]]) }, cam, ratio);
        const [fx, fy] = anchors[anchor];
        // The point 0,0 is the frame's centre.
        const x0 = (100 + (ox - fx * 8) * scale) * ratio;
        const y0 = (80 + (oy - fy * 6) * scale) * ratio;
        assert.deepEqual(await opaqueBox(svg), [x0, y0, x0 + 8 * scale * ratio, y0 + 6 * scale * ratio]);
      }),
      { numRuns: 25 },
    );
  });

  test('the attribution sits in the bottom-right corner, the watermark in the bottom-left; HTML becomes plain text', async () => {
    const overlays = { paths: [], markers: [], shapes: [], icons: [] };
    const attribution = await opaqueBox(overlaySvg({ ...overlays, attribution: plainText('<a href="x">&copy; Data &amp; more</a>') }, cam, 1));
    assert.ok(attribution && attribution[2] === 200 && attribution[3] === 160 && attribution[0] > 80 && attribution[1] >= 140, `attribution box ${attribution}`);
    const watermark = await opaqueBox(overlaySvg({ ...overlays, watermark: 'W' }, cam, 2));
    assert.ok(watermark && watermark[0] < 20 && watermark[2] < 60 && watermark[3] > 300, `watermark box ${watermark}`);
    assert.equal(plainText('<a href="https://x">&copy; OpenMapTiles</a>  <b>&#169;&#x20;OSM</b> &bogus;'), '© OpenMapTiles © OSM &bogus;');
  });
});
