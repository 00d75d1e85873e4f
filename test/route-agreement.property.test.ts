// The route table (src/routes/) against the router: for paths built from every declared route template with
// generated ids (plain, percent-encoded, composites, OGC layer ids, `.json` forms, odd characters), spelt in the
// ways a client may spell them (dot segments, absolute form, lower-case hex), and for junk paths, what the access
// gate reads a path to touch (src/auth/resources.ts, from the table) is what Hono, routing the same request to
// the handlers the router mounted, says: the route it reached and the parameters it extracted, read by the rule
// below that knows nothing of the table's `reads` (a placeholder `{source}` in the route's template names a
// source, `{style}` a style, `{collectionId}` a collection; `/files` and uploads the shared things). A declaration
// that forgets what its route reads, or whose pattern disagrees with Hono's matching, fails here. Beside it, the
// router's start-up checks: a route cannot be mounted without a declaration.
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { Hono } from 'hono';
import fc from './helpers/fast-check.js';
import { pathTargets, type Target } from '../src/auth/resources.js';
import { validateConfig } from '../src/config/load.js';
import { createApp } from '../src/http/app.js';
import { Router, RouteTableError } from '../src/http/router.js';
import { log } from '../src/log.js';
import { splitLayerCollectionId } from '../src/ogc/layer-ids.js';
import { parseUploadIdParam, sourceIdOf } from '../src/uploads/names.js';
import { ADMIN, ADMIN_ROUTES } from '../src/routes/admin-routes.js';
import { route } from '../src/routes/declaration.js';
import { RouteMatcher } from '../src/routes/match.js';
import { PUBLIC, PUBLIC_ROUTES } from '../src/routes/public-routes.js';
import type { AppState } from '../src/state/app-state.js';
import { StateHolder } from '../src/state/holder.js';

const RUNS = { numRuns: 3000 };
const DOC = { summary: 'probe', tag: 'probe', responses: { 200: { description: 'probe' } } };

/** What Hono did with a request: the template of the route it reached and the parameters it extracted, or nothing. */
interface Reached {
  path: string;
  params: Record<string, string>;
}

/** An app whose every declared route answers what it reached, mounted by the real router in the table's order. */
function probeApp(): Hono {
  const app = new Hono();
  const router = new Router(app, () => ({}) as AppState);
  for (const r of PUBLIC_ROUTES) router.add(r, r.undocumented ? undefined : DOC, (c) => c.body(null, 200, { 'x-reached': encodeURIComponent(JSON.stringify({ path: r.path, params: c.req.param() })) }));
  router.mount();
  return app;
}

/** The URL @hono/node-server makes of a request target. */
const requestUrl = (target: string) => (target.startsWith('/') ? new URL(`http://h${target}`) : new URL(target)).href;

async function reached(app: Hono, method: string, target: string): Promise<Reached | undefined> {
  let url: string;
  try {
    url = requestUrl(target);
  } catch {
    return undefined;
  }
  const res = await app.fetch(new Request(url, { method }));
  const h = res.headers.get('x-reached');
  return h ? (JSON.parse(decodeURIComponent(h)) as Reached) : undefined;
}

const members = (id: string): Target[] => id.split('+').map((m) => ({ kind: 'source', id: m }));

/**
 * What a reached route touches, read from its OpenAPI template and Hono's parameters: the template segment that
 * holds `{source}`, `{style}`, `{styleId}` or `{collectionId}` names the Hono parameter of the same segment.
 */
function expectedTargets(r: Reached): Target[] {
  const out: Target[] = [];
  if (r.path.startsWith('/files/') || r.path.startsWith('/api/upload')) out.push({ kind: 'shared' });
  const segments = r.path.split('/');
  const honoSegments = PUBLIC_ROUTES.find((d) => d.path === r.path)!.hono.split('/');
  segments.forEach((seg, i) => {
    const placeholder = /^\{(source|style|styleId|collectionId|id)\}(\.json)?$/.exec(seg);
    if (!placeholder || (placeholder[1] === 'id' && !r.path.startsWith('/api/upload/'))) return;
    const name = /^:(\w+)/.exec(honoSegments[i])![1];
    let value = r.params[name];
    if (placeholder[2]) value = value.slice(0, -placeholder[2].length);
    if (placeholder[1] === 'style' || placeholder[1] === 'styleId') out.push({ kind: 'style', id: value });
    else if (placeholder[1] === 'collectionId') {
      const layer = splitLayerCollectionId(value);
      out.push(...(layer ? [{ kind: 'source' as const, id: layer.source }] : members(value)));
    } else if (placeholder[1] === 'id') {
      // An upload, by its UUID or its source id: the source `upload-<uuid>`, never split at `+`.
      const uuid = parseUploadIdParam(value);
      out.push({ kind: 'source', id: uuid === undefined ? value : sourceIdOf(uuid) });
    } else out.push(...members(value));
  });
  return out;
}

const ID_CHARS = 'abcXYZ019_.-'.split('');
const plainId = fc.tuple(fc.constantFrom('a', 'Z', '0', '_'), fc.array(fc.constantFrom(...ID_CHARS), { maxLength: 8 })).map(([h, t]) => h + t.join(''));
/** Ids a client may write: configured-looking ones, composites, layer collections, `.json` and product forms, odd text. */
const anyId = fc.oneof(
  plainId,
  fc.array(plainId, { minLength: 2, maxLength: 3 }).map((a) => a.join('+')),
  fc.tuple(plainId, fc.string({ unit: 'grapheme', minLength: 1, maxLength: 6 })).map(([s, l]) => `${s}:${l}`),
  plainId.map((s) => `${s}.hillshade`),
  plainId.map((s) => `${s}.json`),
  fc.array(fc.constantFrom(...'ab+,:.%é -_~!$&\'()*;=@'.split('')), { minLength: 1, maxLength: 8 }).map((a) => a.join('')),
);
const number = fc.oneof(fc.nat(30).map(String), fc.constantFrom('x', '-1', '1.5', '007'));

/** Percent-encodes every character a path segment cannot hold, and some others at random (upper or lower hex). */
const spelt = (text: string) =>
  fc.array(fc.integer({ min: 0, max: 3 }), { minLength: text.length, maxLength: text.length }).map((how) =>
    [...text]
      .map((ch, i) => {
        const must = /[/?#%\\\s]/.test(ch) || ch.charCodeAt(0) > 126;
        if (!must && how[i] < 2) return ch;
        const hex = encodeURIComponent(ch) === ch ? `%${ch.charCodeAt(0).toString(16).padStart(2, '0')}` : encodeURIComponent(ch);
        return how[i] === 3 ? hex.toLowerCase() : hex.toUpperCase();
      })
      .join(''),
  );

/** A value for one placeholder of a template. */
function placeholder(name: string): fc.Arbitrary<string> {
  switch (name) {
    case 'z':
    case 'x':
    case 'y':
    case 'tileMatrix':
    case 'tileRow':
    case 'tileCol':
      return number;
    case 'format':
      return fc.constantFrom('pbf', 'mlt', 'png', 'json', 'geojson', 'PNG');
    case 'scale':
      return fc.constantFrom('', '@2x', '@1.5x');
    case 'tile_size':
      return fc.constantFrom('256', '512', '300');
    case 'filepath':
      return fc.array(plainId, { minLength: 1, maxLength: 3 }).map((a) => a.join('/'));
    default:
      return anyId;
  }
}

/** A path made from a declared template, each placeholder filled and spelt, and a method to send it with. */
const declaredPath = fc.constantFrom(...PUBLIC_ROUTES).chain((d) => {
  const names = [...d.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
  return fc.tuple(
    fc.tuple(...names.map((n) => placeholder(n).chain(spelt))),
    fc.constantFrom(d.method.toUpperCase(), ...(d.method === 'get' ? ['HEAD'] : []), 'GET', 'POST', 'DELETE'),
    fc.constantFrom('', '/x/..', '/.', 'http://h', 'http://h/a/..'),
    fc.constantFrom('', '?key=k', '?f=json&a=%2B', '#frag'),
  ).map(([values, method, prefix, query]) => {
    let i = 0;
    const filled = d.path.replace(/\{(\w+)\}/g, () => values[i++]);
    return { method, target: `${prefix}${filled}${query}` };
  });
});

const junkPath = fc.tuple(
  fc.oneof(fc.webPath(), fc.string().map((s) => `/${s}`), fc.array(fc.constantFrom('data', 'styles', 'ogc', 'collections', 'api', 'x', '..', '.', '%2e', 'a+b', '%2F', '', 'tiles', '0'), { maxLength: 7 }).map((a) => `/${a.join('/')}`)),
  fc.constantFrom('GET', 'HEAD', 'POST', 'DELETE', 'PUT'),
).map(([target, method]) => ({ method, target }));

describe('the gate and the router agree on what every path touches', () => {
  const app = probeApp();
  let matched = 0;
  let touching = 0;

  test('paths of every declared route, however spelt, and junk', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof({ weight: 4, arbitrary: declaredPath }, { weight: 1, arbitrary: junkPath }), async ({ method, target }) => {
        const gate = pathTargets(method, target);
        const hono = await reached(app, method, target);
        if (hono) matched++;
        const expected = hono ? expectedTargets(hono) : [];
        if (expected.length) touching++;
        assert.deepEqual(gate.targets, expected, `${method} ${target} reached ${hono?.path ?? 'no route'} with ${JSON.stringify(hono?.params)}`);
        // Whose bearer a header carries: MCP's on /mcp and the OAuth routes, this service's everywhere else.
        const mcps = hono !== undefined && /^\/(mcp|oauth\/|\.well-known\/)/.test(hono.path);
        assert.equal(gate.bearer, !mcps, `${method} ${target}: bearer`);
      }),
      RUNS,
    );
    // The generator reaches routes, and routes that read something, most of the time (else the property is idle).
    assert.ok(matched > RUNS.numRuns / 3 && touching > RUNS.numRuns / 5, `${matched} matched, ${touching} touching of ${RUNS.numRuns}`);
  });

  test('every declared route is reached by its own template, and the named cases read as the docs say', async () => {
    for (const d of PUBLIC_ROUTES) {
      const target = d.path.replace(/\{(\w+)\}/g, (_m, n: string) => (['z', 'x', 'y', 'tileMatrix', 'tileRow', 'tileCol'].includes(n) ? '1' : n === 'tile_size' ? '256' : n === 'format' ? 'png' : 'id1'));
      const hono = await reached(app, d.method.toUpperCase(), target);
      assert.equal(hono?.path, d.path, `${d.method} ${target} reaches its own route (not one declared before it)`);
    }
    const at = (method: string, target: string) => pathTargets(method, target).targets;
    assert.deepEqual(at('GET', '/data/os%6D/1/2/3.pbf'), [{ kind: 'source', id: 'osm' }]);
    assert.deepEqual(at('GET', '/x/../data/osm/1/2/3.pbf'), [{ kind: 'source', id: 'osm' }]);
    assert.deepEqual(at('GET', '/data/a%2Bb.json'), [{ kind: 'source', id: 'a' }, { kind: 'source', id: 'b' }]);
    assert.deepEqual(at('GET', '/data/a,b/1/2/3.pbf'), [{ kind: 'source', id: 'a,b' }], 'a comma separates nothing');
    assert.deepEqual(at('GET', '/ogc/collections/city:a+b/items'), [{ kind: 'source', id: 'city' }]);
    assert.deepEqual(at('DELETE', '/api/upload/upload-1'), [{ kind: 'shared' }, { kind: 'source', id: 'upload-1' }]);
    const uuid = '0f8fad5b-d9cb-469f-a165-70867728950e';
    for (const spelt of [uuid, uuid.toUpperCase(), `upload-${uuid}`]) assert.deepEqual(at('DELETE', `/api/upload/${spelt}`), [{ kind: 'shared' }, { kind: 'source', id: `upload-${uuid}` }], spelt);
    assert.deepEqual(at('GET', '/data/osm/no/such/route/here'), [], 'no route: nothing');
    assert.deepEqual(at('POST', '/data/osm/1/2/3.pbf'), [], 'no route for the method: nothing');
  });
});

describe('a route cannot be mounted without its declaration', () => {
  const handler = () => new Response('x');

  test('a declaration that is not in the table is refused', () => {
    const router = new Router(new Hono(), () => ({}) as AppState);
    const stray = route('public', 'get', '/stray', '/stray');
    assert.throws(() => router.add(stray, DOC, handler), (err: Error) => err instanceof RouteTableError && /GET \/stray: not a declaration of the route table/.test(err.message));
  });

  test('a declared route without its handler stops the mount', () => {
    const table = [route('public', 'get', '/a', '/a'), route('public', 'get', '/b', '/b'), route('public', 'get', '/c', '/c', { mountedWith: 'a switch' })];
    const router = new Router(new Hono(), () => ({}) as AppState, table);
    router.add(table[0], DOC, handler);
    assert.throws(() => router.mount(), (err: Error) => err instanceof RouteTableError && /declared routes without a handler: GET \/b$/.test(err.message));
  });

  test('a route put on the Hono app around the router stops the mount', () => {
    const app = new Hono();
    const table = [route('public', 'get', '/a', '/a')];
    const router = new Router(app, () => ({}) as AppState, table);
    router.add(table[0], DOC, handler);
    app.get('/sneaked', handler);
    assert.throws(() => router.mount(), (err: Error) => err instanceof RouteTableError && /routes mounted without a declaration: GET \/sneaked/.test(err.message));
  });

  test('a documented route needs its OpenAPI text, an undocumented one takes none, and a handler is bound once', () => {
    const router = new Router(new Hono(), () => ({}) as AppState);
    assert.throws(() => router.add(PUBLIC.health, undefined, handler), /has no OpenAPI description/);
    assert.throws(() => router.add(PUBLIC.oauthToken, DOC, handler), /declared undocumented but given/);
    router.add(PUBLIC.health, DOC, handler);
    assert.throws(() => router.add(PUBLIC.health, DOC, handler), /bound to it twice/);
  });

  test('the real app mounts every declared route, in the table\'s order, and nothing else', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-routes-'));
    const { config } = validateConfig({ sources: [], cache: { dir }, mcp: { enabled: true, oauth: { enabled: true, consent_secret: 'c'.repeat(40) } } }, 't.toml', dir, {});
    const state = { config, sources: new Map(), composites: new Map(), styles: new Map() } as unknown as AppState;
    const ctx = { holder: new StateHolder(state), version: 't', runtime: {} as never, render: {} as never, uploads: {} as never };
    const { app } = createApp(ctx, log);
    const mounted = app.routes.filter((r) => r.method !== 'ALL').map((r) => `${r.method} ${r.path}`);
    assert.deepEqual(mounted, PUBLIC_ROUTES.map((r) => `${r.method.toUpperCase()} ${r.hono}`));
  });
});

test('the admin table: its paths, the methods a 405 allows, HEAD not taken for GET, ids as sent', () => {
  const admin = new RouteMatcher(ADMIN_ROUTES, false);
  assert.deepEqual(admin.methodsAt('/__admin/reload'), ['POST']);
  assert.deepEqual(admin.methodsAt('/__admin/oauth/clients'), ['GET']);
  assert.deepEqual(admin.methodsAt('/__admin/oauth/sessions/t%2F1'), ['DELETE']);
  assert.deepEqual(admin.methodsAt('/__admin/reload/'), [], 'no trailing slash');
  assert.deepEqual(admin.methodsAt('/__admin/rel%6Fad'), [], 'the path as sent: no decoding');
  assert.equal(admin.match('HEAD', '/__admin/oauth/clients'), undefined);
  const m = admin.match('DELETE', '/__admin/oauth/clients/a%2Fb');
  assert.equal(m?.route, ADMIN.oauthClientDelete);
  assert.equal(m?.rawParam('client_id'), 'a%2Fb');
  assert.ok(ADMIN_ROUTES.every((r) => r.listener === 'admin' && r.reads.length === 0));
  assert.ok(PUBLIC_ROUTES.every((r) => r.listener === 'public'));
});
