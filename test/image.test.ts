// The container image (Dockerfile) and the fleet (deploy/compose.yaml), with a real container engine: Debian's
// podman. The image is built from the Dockerfile over a local Debian 12 base holding this machine's Node 20
// (scripts/image-base.sh; no image registry is reachable here), started with the bundled data and asked from
// outside (the published port) and from inside (`podman exec`). Then the compose file runs two instances, Redis
// and nginx: a tile rendered through one instance is served by the other from Redis. `make test-image` runs this
// file alone; `make test` runs it with the rest. Podman, podman-compose and mmdebstrap missing is a failure.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { PNG } from 'pngjs';
import { layerCounts, sha256, tempDir, waitFor } from './helpers/foundation.js';
import { fetchInside, has, podman, podmanCompose, podmanEnv, podmanQuiet, run } from './helpers/podman.js';
import { freePort, ROOT } from './helpers/server.js';

/** The base the test builds on; kept between runs under this tag (scripts/image-base.sh builds it when absent). */
const BASE = 'localhost/tsts-base:bookworm-node20';
const TAG = `localhost/tileserver-ts:test-${process.pid}`;
const HELPERS_TAG = `localhost/tsts-fleet-helpers:test-${process.pid}`;
const NAME = `tsts-image-${process.pid}`;
const T = 60_000;

const log = (line: string) => process.stderr.write(`# image: ${line}\n`);
const seconds = (since: number) => `${((Date.now() - since) / 1000).toFixed(1)} s`;

async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Headers; body: Buffer }> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(T) });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

const ready = async (url: string) => (await fetch(`${url}/ready`, { signal: AbortSignal.timeout(5_000) }).then((r) => r.status, () => 0)) === 200 || undefined;

interface Image {
  ok: boolean;
}
const image: Image = { ok: false };

before(async () => {
  for (const tool of ['podman', 'podman-compose', 'mmdebstrap']) assert.ok(await has(tool), `${tool} is missing: \`make system-deps\` installs it (Debian package ${tool})`);
  const start = Date.now();
  const base = await run(path.join(ROOT, 'scripts/image-base.sh'), [BASE], 600_000);
  assert.equal(base.code, 0, `scripts/image-base.sh failed:\n${base.stderr}\n${base.stdout}`);
  log(`${base.stdout.trim()} (${seconds(start)})`);
  const build = Date.now();
  await podman(['build', '--format', 'docker', '--build-arg', `BASE=${BASE}`, '-t', TAG, '.'], 1_500_000);
  log(`image built in ${seconds(build)}; size ${(await podman(['image', 'ls', '--format', '{{.Size}}', TAG])).trim()}`);
  image.ok = true;
}, { timeout: 2_100_000 });

after(async () => {
  await podmanQuiet(['rmi', '-f', TAG, HELPERS_TAG]);
});

describe('the image, started with the bundled data', { timeout: 600_000 }, () => {
  let url = '';
  before(async () => {
    assert.ok(image.ok, 'the image did not build');
    const port = await freePort();
    const start = Date.now();
    await podman(['run', '-d', '--name', NAME, '-p', `127.0.0.1:${port}:8080`, TAG]);
    url = `http://127.0.0.1:${port}`;
    await waitFor('/ready of the container', () => ready(url), 180_000);
    log(`cold start-up to /ready: ${seconds(start)}`);
  });
  after(async () => {
    await podmanQuiet(['rm', '-f', '-t', '0', NAME]);
  });

  test('runs as a non-root user; 8080 exposed, /health checked, SIGTERM stops it', async () => {
    assert.notEqual((await podman(['exec', NAME, 'id', '-u'])).trim(), '0');
    const [config] = JSON.parse(await podman(['image', 'inspect', TAG])) as { Config: { User: string; ExposedPorts: Record<string, unknown>; StopSignal: string }; Healthcheck?: { Test: string[] } }[];
    assert.equal(config.Config.User, '10001:10001');
    assert.ok('8080/tcp' in config.Config.ExposedPorts);
    assert.equal(config.Config.StopSignal, 'SIGTERM');
    assert.match(config.Healthcheck?.Test.join(' ') ?? '', /127\.0\.0\.1:8080\/health/);
    // The HEALTHCHECK command itself passes in the running container.
    const health = await run('podman', ['--runtime', 'runc', '--cgroup-manager=cgroupfs', 'healthcheck', 'run', NAME], 30_000);
    assert.equal(health.code, 0, `healthcheck: ${health.stdout}${health.stderr}`);
  });

  test('a vector tile, a rendered tile and a static map, from outside and from inside the container', async () => {
    const vector = await get(`${url}/data/openmaptiles/0/0/0.pbf`);
    assert.equal(vector.status, 200);
    assert.ok((layerCounts(vector.body).water ?? 0) > 0, 'the z0 tile has water');
    const tile = await get(`${url}/styles/osm-liberty/1/0/0.png`);
    assert.equal(tile.status, 200);
    assert.equal(tile.headers.get('content-type'), 'image/png');
    const png = PNG.sync.read(tile.body);
    assert.deepEqual([png.width, png.height], [512, 512]);
    const map = await get(`${url}/styles/osm-liberty/static/10,20,2/300x200.png`);
    assert.equal(map.status, 200);
    const mapPng = PNG.sync.read(map.body);
    assert.deepEqual([mapPng.width, mapPng.height], [300, 200]);
    // From inside: the same bytes (the images come from the memory cache the outside requests filled).
    for (const [p, body] of [['/data/openmaptiles/0/0/0.pbf', vector.body], ['/styles/osm-liberty/1/0/0.png', tile.body], ['/styles/osm-liberty/static/10,20,2/300x200.png', map.body]] as const) {
      const inside = await fetchInside(NAME, `http://127.0.0.1:8080${p}`);
      assert.equal(inside.status, 200, p);
      assert.equal(inside.sha256, sha256(body), `${p}: same bytes inside and outside`);
    }
  });

  test('SIGTERM during a slow render: the request completes and the container exits 0', async () => {
    let answeredAt = 0;
    const slow = get(`${url}/styles/osm-liberty/static/0,20,1/2000x2000@2x.png`).then((r) => ((answeredAt = Date.now()), r));
    await new Promise((r) => setTimeout(r, 800));
    const signalledAt = Date.now();
    await podman(['kill', '--signal', 'SIGTERM', NAME]);
    const answer = await slow;
    assert.ok(answeredAt > signalledAt, 'the request was still under way when SIGTERM came');
    assert.equal(answer.status, 200);
    const png = PNG.sync.read(answer.body);
    assert.deepEqual([png.width, png.height], [4000, 4000]);
    assert.equal((await podman(['wait', NAME], 90_000)).trim(), '0');
  });
});

describe('the image serves archives mounted at /data (folder mode)', { timeout: 300_000 }, () => {
  const name = `${NAME}-data`;
  after(async () => {
    await podmanQuiet(['rm', '-f', '-t', '0', name]);
  });

  test('every archive of /data is served under its file name, read-only mount, no configuration', async () => {
    assert.ok(image.ok, 'the image did not build');
    const port = await freePort();
    await podman(['run', '-d', '--name', name, '-p', `127.0.0.1:${port}:8080`, '-v', `${path.join(ROOT, 'fixtures/vector')}:/data:ro`, TAG]);
    const url = `http://127.0.0.1:${port}`;
    await waitFor('/ready of the /data container', () => ready(url), 180_000);
    const tile = await get(`${url}/data/omt-planet-z0-1/0/0/0.pbf`);
    assert.equal(tile.status, 200);
    assert.ok((layerCounts(tile.body).water ?? 0) > 0);
    const cities = await get(`${url}/data/world_cities.json`);
    assert.equal(cities.status, 200, 'the .mbtiles of the folder too');
  });
});

describe('the compose fleet: two instances, Redis and nginx', { timeout: 900_000 }, () => {
  const project = `tsts${process.pid}`;
  let env: Record<string, string> = {};
  let url = '';
  const a = `${project}_tiles-a_1`;
  const b = `${project}_tiles-b_1`;

  before(async () => {
    assert.ok(image.ok, 'the image did not build');
    // No registry here: Redis and nginx come from Debian's packages in one small image over the same base.
    const dir = tempDir('tsts-fleet-helpers-');
    const containerfile = `FROM ${BASE}
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server nginx-light \\
 && rm -rf /var/lib/apt/lists/* /etc/nginx/sites-enabled/default
`;
    writeFileSync(path.join(dir, 'Containerfile'), containerfile);
    await podman(['build', '-t', HELPERS_TAG, dir], 600_000);
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    env = { TILESERVER_IMAGE: TAG, REDIS_IMAGE: HELPERS_TAG, NGINX_IMAGE: HELPERS_TAG, FLEET_PORT: String(port) };
    const start = Date.now();
    await podmanCompose(['-p', project, '-f', 'deploy/compose.yaml', 'up', '-d'], env);
    for (const c of [a, b]) await waitFor(`/ready of ${c}`, async () => (await fetchInside(c, 'http://127.0.0.1:8080/ready').catch(() => undefined))?.status === 200 || undefined, 240_000);
    await waitFor('nginx', () => ready(url), 60_000);
    log(`fleet up and ready in ${seconds(start)}`);
  });
  after(async () => {
    await run('podman-compose', ['--podman-args', '--runtime runc --cgroup-manager=cgroupfs', '-p', project, '-f', 'deploy/compose.yaml', 'down', '-t', '5'], 180_000, { ...podmanEnv(), ...env });
    await podmanQuiet(['network', 'rm', '-f', `${project}_default`]);
    await podmanQuiet(['pod', 'rm', '-f', `pod_${project}`]);
  });

  test('a tile rendered through instance A is served by instance B from Redis', async () => {
    const tile = 'http://127.0.0.1:8080/styles/osm-liberty/5/16/10.png';
    const first = await fetchInside(a, tile);
    assert.equal(first.status, 200);
    assert.doesNotMatch(first.headers['server-timing'] ?? '', /cache;desc="shared"/, 'A rendered it');
    const second = await fetchInside(b, tile);
    assert.equal(second.status, 200);
    assert.match(second.headers['server-timing'] ?? '', /cache;desc="shared"/, 'B found it in the shared cache');
    assert.equal(second.sha256, first.sha256);
  });

  test('nginx balances over both, passes X-Request-Id, and serves what they render', async () => {
    const answer = await get(`${url}/styles/osm-liberty/5/16/10.png`, { 'x-request-id': 'image-test-1' });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('x-request-id'), 'image-test-1');
    assert.equal(PNG.sync.read(answer.body).width, 512);
    const style = await get(`${url}/styles/osm-liberty/style.json`);
    assert.equal(style.status, 200);
    assert.match(readFileSync(path.join(ROOT, 'deploy/fleet/nginx.conf'), 'utf8'), /tiles-a:8080[\s\S]*tiles-b:8080/);
  });
});
