// The edge: a real varnishd (deploy/varnish/tiles.vcl, xkey) in front of the real server with `[cache] purge_urls`
// naming it (and a second target that refuses connections). A tile through Varnish is a miss, then a hit; an
// expiry of its tile, of a tile inside it or of the whole source purges it (the next answer is a miss fetched
// from the server) while a tile elsewhere stays cached; a rendered style tile is purged by an expiry of a source
// its style draws; the dead target is counted as failed and holds nothing up; Surrogate-Key reaches Varnish.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort, osmLibertyToml, startServer, type TestServer } from './helpers/server.js';
import { startVarnish, type VarnishServer } from './helpers/varnish.js';

let server: TestServer;
let varnish: VarnishServer;
let admin: string;
let metrics: string;
let scratch: string;

before(async () => {
  scratch = mkdtempSync(path.join(os.tmpdir(), 'tsts-expire-edge-'));
  const [port, adminPort, metricsPort, varnishPort, deadPort] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  admin = `http://127.0.0.1:${adminPort}`;
  metrics = `http://127.0.0.1:${metricsPort}/metrics`;
  server = await startServer({
    port,
    toml: osmLibertyToml(`
[server]
admin_bind = "127.0.0.1:${adminPort}"
[render]
pool_size = 1
[cache]
dir = "${path.join(scratch, 'cache')}"
purge_urls = ["http://127.0.0.1:${varnishPort}", "http://127.0.0.1:${deadPort}"]
purge_timeout_ms = 2000
[telemetry]
scrape_bind = "127.0.0.1:${metricsPort}"
`),
  });
  varnish = await startVarnish(port, varnishPort);
});

after(async () => {
  await varnish?.stop();
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** A GET through Varnish: its status, whether Varnish answered from its cache, and the surrogate keys. */
async function edge(p: string): Promise<{ status: number; cache: string | null; keys: string[] }> {
  const res = await fetch(`${varnish.url}${p}`);
  await res.arrayBuffer();
  return { status: res.status, cache: res.headers.get('x-cache'), keys: (res.headers.get('surrogate-key') ?? '').split(' ') };
}

async function expire(source: string, lines: string[]): Promise<void> {
  const res = await fetch(`${admin}/__admin/expire?source=${source}`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: `${lines.join('\n')}\n` });
  assert.equal(res.status, 200, await res.text());
}

/** Waits until `p` is no longer a hit at the edge (the purge goes out after the expiry's answer). */
async function purged(p: string, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    const r = await edge(p);
    if (r.cache === 'miss') return;
    if (Date.now() > end) throw new Error(`${p} is still a hit at the edge ${ms} ms after its expiry`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function cached(p: string): Promise<void> {
  await edge(p);
  assert.equal((await edge(p)).cache, 'hit', `${p} is cached at the edge`);
}

async function purgeCount(result: string): Promise<number> {
  const text = await (await fetch(metrics)).text();
  return Number(new RegExp(`^edge_purge_requests_total\\{result="${result}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
}

describe('source tiles at the edge', () => {
  const A = '/data/openmaptiles/1/0/0.pbf';
  const B = '/data/openmaptiles/1/1/1.pbf';
  const WORLD = '/data/openmaptiles/0/0/0.pbf';

  test('a tile is a miss, then a hit, and carries its Surrogate-Key to the edge', async () => {
    const first = await edge(A);
    assert.equal(first.status, 200);
    assert.equal(first.cache, 'miss');
    for (const k of ['src:openmaptiles', 'tile:openmaptiles/1/0/0']) assert.ok(first.keys.includes(k), `${k} in ${first.keys.join(' ')}`);
    assert.equal((await edge(A)).cache, 'hit');
  });

  test('an expiry of the tile purges it and its parent; a tile elsewhere stays cached; a dead target is counted and holds nothing up', async () => {
    for (const p of [A, B, WORLD]) await cached(p);
    const [ok, failed] = [await purgeCount('ok'), await purgeCount('failed')];
    await expire('openmaptiles', ['1/0/0']);
    await purged(A);
    await purged(WORLD);
    assert.equal((await edge(B)).cache, 'hit', 'the tile the expiry did not touch');
    assert.ok((await purgeCount('ok')) > ok, 'the purge was counted');
    const end = Date.now() + 5_000;
    while ((await purgeCount('failed')) === failed && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    assert.ok((await purgeCount('failed')) > failed, 'the dead target was counted as failed');
  });

  test('an expiry deep inside a tile purges it; one of another source does not', async () => {
    for (const p of [A, B]) await cached(p);
    await expire('natural_earth', ['1/0/0']);
    // The purge of another source names no key of these answers; give it time to have been sent.
    await new Promise((r) => setTimeout(r, 500));
    assert.equal((await edge(A)).cache, 'hit', 'an expiry of natural_earth leaves openmaptiles tiles');
    await expire('openmaptiles', ['9/3/5']);
    await purged(A);
    assert.equal((await edge(B)).cache, 'hit');
  });
});

describe('rendered tiles at the edge', () => {
  const T = '/styles/osm-liberty/0/0/0.png';
  test('a style tile names its style and every source it draws, and an expiry of one of them purges it', async () => {
    const first = await edge(T);
    assert.equal(first.status, 200);
    for (const k of ['style:osm-liberty', 'src:openmaptiles', 'src:natural_earth', 'tile:openmaptiles/0/0/0']) assert.ok(first.keys.includes(k), `${k} in ${first.keys.join(' ')}`);
    assert.equal((await edge(T)).cache, 'hit');
    await expire('natural_earth', ['1/1/0']);
    await purged(T);
  });
});
