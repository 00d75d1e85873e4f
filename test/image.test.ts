// The container image (Dockerfile) and the fleet (deploy/compose.yaml), with a real container engine: Debian's
// podman. The image is built from the Dockerfile over a local Debian 13 base holding the Node project's Node 26
// (scripts/image-base.sh; no image registry is reachable here), with the very command and tag of
// docs/deployment.md, started with the bundled data and asked from outside (the published port) and from inside
// (`podman exec`). Then the compose file runs two instances, Redis and nginx, with its default image (the tag
// the docs build): a tile rendered through one instance is served by the other from Redis. `make test-image`
// runs this file alone; `make test` runs it with the rest. Podman, podman-compose and mmdebstrap missing is a
// failure. The image tag is the documented one: an image already holding it gets it back at the end, so two
// runs of this file at once on one machine are not supported (containers, projects and the helpers' image carry
// the process id).
import assert from 'node:assert/strict';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import yaml from 'js-yaml';
import { PNG } from 'pngjs';
import { layerCounts, sha256, tempDir, waitFor } from './helpers/foundation.js';
import { CONTAINERS_CONF_TEXT, fetchInside, GLOBAL, has, podman, podmanCompose, podmanEnv, podmanQuiet, podmanRun, run } from './helpers/podman.js';
import { freePort, ROOT } from './helpers/server.js';

const DOCS = readFileSync(path.join(ROOT, 'docs/deployment.md'), 'utf8');
/** The build command of docs/deployment.md where no registry is reachable: the base and the tag the test uses. */
const DOC_BUILD = /^podman build --format docker --build-arg BASE=(\S+) -t (\S+) \.$/m.exec(DOCS);
assert.ok(DOC_BUILD, 'docs/deployment.md has the build command over a local base');
const [, BASE, DOC_TAG] = DOC_BUILD;
/** The Node.js major of the Dockerfile's default base (the public `node:N-trixie-slim`), which the local base carries. */
const NODE_MAJOR = /^ARG BASE=docker\.io\/library\/node:(\d+)-/m.exec(readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'))?.[1];
assert.ok(NODE_MAJOR, 'the Dockerfile names a public node:N image as its default base');
/** What an engine names `-t NAME`: a name without a registry host goes under `localhost/` (podman) or
 *  `docker.io/library/` (Docker), and a name without a tag gets `:latest`. */
const engineRef = (name: string, home: 'localhost' | 'docker.io/library') => {
  const first = name.split('/')[0];
  const hosted = name.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  const full = hosted ? name : `${home}/${name}`;
  return /:[^/]*$/.test(full) ? full : `${full}:latest`;
};
const TAG = engineRef(DOC_TAG, 'localhost');
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
  /** The image id of the build. */
  id: string;
  /** The image that held TAG before the build (a user's own build), tagged again at the end. */
  prior?: string;
  /** Dangling images there before the build: anything dangling beyond them (and `prior`) was left by this run. */
  danglingBefore: Set<string>;
}
const image: Image = { ok: false, id: '', danglingBefore: new Set() };

/** An image id as podman prints it in one place or another, without the `sha256:` some commands add. */
const bareId = (id: string) => id.trim().replace(/^sha256:/, '');
const danglingImages = async () => new Set((await podman(['images', '-q', '--no-trunc', '--filter', 'dangling=true'])).split('\n').filter(Boolean).map(bareId));

/**
 * Removes the dangling images this run's builds left: a multi-stage build leaves its build stage (3.3 GB of
 * compilers, headers and dev packages) untagged. Those of other builds stay; so does the build cache of the
 * layers they share, while this run's own build-stage layers go with it.
 */
async function pruneOwnDangling(): Promise<void> {
  const keep = new Set([...image.danglingBefore, ...(image.prior ? [image.prior] : [])]);
  for (const id of await danglingImages()) if (!keep.has(id)) await podmanQuiet(['rmi', id]);
}

before(async () => {
  for (const tool of ['podman', 'podman-compose', 'mmdebstrap']) assert.ok(await has(tool), `${tool} is missing: \`make system-deps\` installs it (Debian package ${tool})`);
  const start = Date.now();
  // NODE is named rather than inherited: `make test NODE=22` exports it, and the base is the image's Node whatever
  // Node the suite runs on.
  const base = await run(path.join(ROOT, 'scripts/image-base.sh'), [BASE], 600_000, { ...podmanEnv(), NODE: NODE_MAJOR });
  assert.equal(base.code, 0, `scripts/image-base.sh failed:\n${base.stderr}\n${base.stdout}`);
  log(`${base.stdout.trim()} (${seconds(start)})`);
  const held = await podmanRun(['image', 'inspect', '--format', '{{.Id}}', TAG], 30_000);
  if (held.code === 0) image.prior = bareId(held.stdout);
  image.danglingBefore = await danglingImages();
  const build = Date.now();
  // Exactly the documented command (docs/deployment.md, "The base image").
  await podman(['build', '--format', 'docker', '--build-arg', `BASE=${BASE}`, '-t', DOC_TAG, '.'], 1_500_000);
  image.id = bareId(await podman(['image', 'inspect', '--format', '{{.Id}}', TAG]));
  await pruneOwnDangling();
  log(`image built in ${seconds(build)}; size ${(await podman(['image', 'ls', '--format', '{{.Size}}', TAG])).trim()}`);
  image.ok = true;
}, { timeout: 2_100_000 });

after(async () => {
  await podmanQuiet(['rmi', '-f', HELPERS_TAG]);
  // A build identical to the image that held the tag (every layer from the cache) is that image: it stays.
  if (image.id && image.id !== image.prior) await podmanQuiet(['rmi', '-f', image.id]);
  if (image.prior) await podmanQuiet(['tag', image.prior, TAG]);
  await pruneOwnDangling();
});

test('the documented build tag is what the compose file runs by default, with podman and with Docker', () => {
  const compose = yaml.load(readFileSync(path.join(ROOT, 'deploy/compose.yaml'), 'utf8')) as { services: Record<string, { image: string }> };
  const fallback = /^\$\{TILESERVER_IMAGE:-(.+)\}$/.exec(compose.services['tiles-a'].image)?.[1];
  assert.ok(fallback, 'tiles-a: image ${TILESERVER_IMAGE:-default}');
  assert.equal(compose.services['tiles-b'].image, compose.services['tiles-a'].image);
  // Every build command of the docs and the README tags the same name.
  const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const tags = [...`${DOCS}\n${readme}`.matchAll(/(?:podman|docker) build\b[^\n`]*? -t (\S+) \./g)].map((m) => m[1]);
  assert.ok(tags.length >= 4, `build commands found: ${tags.length}`);
  assert.deepEqual([...new Set(tags)], [DOC_TAG]);
  for (const home of ['localhost', 'docker.io/library'] as const) assert.equal(engineRef(fallback, home), engineRef(DOC_TAG, home), `as ${home === 'localhost' ? 'podman' : 'Docker'} names them`);
});

test('the podman settings docs/deployment.md gives for a host without systemd are the ones this file runs with', () => {
  assert.ok(DOCS.includes(`\`\`\`toml\n${CONTAINERS_CONF_TEXT}\`\`\``), 'the containers.conf of test/helpers/podman.ts');
  assert.ok(DOCS.includes(`\npodman ${GLOBAL.join(' ')} build --format docker -t ${DOC_TAG} .\n`));
  assert.ok(DOCS.includes(`\npodman-compose --podman-args '${GLOBAL.join(' ')}' -f deploy/compose.yaml up -d\n`));
});

test('`podman run --rm IMAGE --help`: the arguments go to the command line, which prints its usage and exits 0', async () => {
  assert.ok(image.ok, 'the image did not build');
  const help = await podmanRun(['run', '--rm', DOC_TAG, '--help'], 120_000);
  assert.equal(help.code, 0, help.stderr);
  assert.match(help.stdout, /^Usage:\n\s+tileserver-ts --config FILE\s/);
  assert.match(help.stdout, /tileserver-ts seed --config FILE/);
});

test("the image runs the Node.js major of the Dockerfile's default base, over the documented local base as well", async () => {
  assert.ok(image.ok, 'the image did not build');
  const major = NODE_MAJOR;
  assert.ok(BASE.endsWith(`-node${major}`), `the documented local base ${BASE} is named for Node ${major}`);
  const version = await podmanRun(['run', '--rm', '--entrypoint', 'node', DOC_TAG, '--version'], 120_000);
  assert.equal(version.code, 0, version.stderr);
  assert.match(version.stdout.trim(), new RegExp(`^v${major}\\.`));
});

test('the image is Debian 13 (trixie), the release of its default base and of the documented local base', async () => {
  assert.ok(image.ok, 'the image did not build');
  assert.match(readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8'), /^ARG BASE=docker\.io\/library\/node:\d+-trixie-slim$/m);
  assert.match(BASE, /:trixie-node\d+$/);
  const release = await podmanRun(['run', '--rm', '--entrypoint', 'cat', DOC_TAG, '/etc/os-release'], 120_000);
  assert.equal(release.code, 0, release.stderr);
  assert.match(release.stdout, /^VERSION_CODENAME=trixie$/m);
});

describe('the image, started with the bundled data', { timeout: 600_000 }, () => {
  let url = '';
  before(async () => {
    assert.ok(image.ok, 'the image did not build');
    const port = await freePort();
    const start = Date.now();
    await podman(['run', '-d', '--name', NAME, '-p', `127.0.0.1:${port}:8080`, DOC_TAG]);
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
    const health = await podmanRun(['healthcheck', 'run', NAME], 30_000);
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
    // The image's Mesa is why it runs Debian 13: the renderer draws with lavapipe, not Chromium's SwiftShader
    // fallback (which it takes silently when the Vulkan driver is missing or fails).
    const ping = JSON.parse((await get(`${url}/ping`)).body.toString()) as { renderer: string | null; renderer_gl: string | null };
    assert.deepEqual([ping.renderer, ping.renderer_gl], ['chromium', 'lavapipe']);
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

  test('`podman stop -t 60` during a slow render: the request completes and the container exits 0', async () => {
    let answeredAt = 0;
    // 2000 px a side: a quarter of the 4000 px this asked for before (30 s of drawing and encoding in the container),
    // still seconds past the 800 ms to the stop.
    const slow = get(`${url}/styles/osm-liberty/static/0,20,1/1000x1000@2x.png`).then((r) => ((answeredAt = Date.now()), r));
    await new Promise((r) => setTimeout(r, 800));
    const signalledAt = Date.now();
    // As docs/deployment.md says: SIGTERM (the image's STOPSIGNAL), then up to 60 s before the engine kills it.
    const stop = podman(['stop', '-t', '60', NAME], 90_000);
    const answer = await slow;
    assert.ok(answeredAt > signalledAt, 'the request was still under way when the stop came');
    assert.equal(answer.status, 200);
    const png = PNG.sync.read(answer.body);
    assert.deepEqual([png.width, png.height], [2000, 2000]);
    await stop;
    assert.equal((await podman(['inspect', '--format', '{{.State.ExitCode}}', NAME])).trim(), '0');
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
    await podman(['run', '-d', '--name', name, '-p', `127.0.0.1:${port}:8080`, '-v', `${path.join(ROOT, 'fixtures/vector')}:/data:ro`, DOC_TAG]);
    const url = `http://127.0.0.1:${port}`;
    await waitFor('/ready of the /data container', () => ready(url), 180_000);
    const tile = await get(`${url}/data/omt-planet-z0-1/0/0/0.pbf`);
    assert.equal(tile.status, 200);
    assert.ok((layerCounts(tile.body).water ?? 0) > 0);
    const cities = await get(`${url}/data/world_cities.json`);
    assert.equal(cities.status, 200, 'the .mbtiles of the folder too');
  });
});

describe('the image with a configuration at /config/config.toml and archives at /data', { timeout: 300_000 }, () => {
  const name = `${NAME}-config`;
  after(async () => {
    await podmanQuiet(['rm', '-f', '-t', '0', name]);
  });

  test('the configuration is served, paths in it inside the container; /config wins over the folder mode of /data', async () => {
    assert.ok(image.ok, 'the image did not build');
    const dir = tempDir('tsts-image-config-');
    const file = path.join(dir, 'config.toml');
    // A COG as well: raster sources load gdal-async, which needs GDAL's and PROJ's data files in the image.
    writeFileSync(
      file,
      '[server]\nhost = "0.0.0.0"\nport = 8080\n\n[[sources]]\nid = "cities"\ntype = "mbtiles"\npath = "/data/world_cities.mbtiles"\n\n' +
        '[[sources]]\nid = "rgb"\ntype = "cog"\npath = "/cog/test-rgb.cog.tif"\n',
    );
    // The service runs as uid 10001: the mounted file must be readable by it (docs/deployment.md, "User").
    chmodSync(dir, 0o755);
    chmodSync(file, 0o644);
    const port = await freePort();
    await podman(['run', '-d', '--name', name, '-p', `127.0.0.1:${port}:8080`, '-v', `${file}:/config/config.toml:ro`, '-v', `${path.join(ROOT, 'fixtures/vector')}:/data:ro`, '-v', `${path.join(ROOT, 'fixtures/cog')}:/cog:ro`, DOC_TAG]);
    const url = `http://127.0.0.1:${port}`;
    await waitFor('/ready of the /config container', () => ready(url), 180_000);
    // San Francisco at z12, inside the COG: GDAL read it in the container.
    const raster = await get(`${url}/data/rgb/12/655/1582.png`);
    assert.equal(raster.status, 200, raster.body.toString().slice(0, 300));
    assert.equal(raster.headers.get('content-type'), 'image/png');
    const tilejson = await get(`${url}/data/cities.json`);
    assert.equal(tilejson.status, 200, 'the configured source, by its configured id');
    assert.match(tilejson.body.toString(), /"tiles":\[/);
    assert.equal((await get(`${url}/data/world_cities.json`)).status, 404, 'not the folder mode\'s id');
    assert.equal((await get(`${url}/data/omt-planet-z0-1.json`)).status, 404, 'nor the folder\'s other archives');
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
RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server nginx \\
 && rm -rf /var/lib/apt/lists/* /etc/nginx/sites-enabled/default
`;
    writeFileSync(path.join(dir, 'Containerfile'), containerfile);
    await podman(['build', '-t', HELPERS_TAG, dir], 600_000);
    await pruneOwnDangling();
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    // No TILESERVER_IMAGE: the compose file's default is the image the documented command built.
    env = { REDIS_IMAGE: HELPERS_TAG, NGINX_IMAGE: HELPERS_TAG, FLEET_PORT: String(port) };
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
    // A's processes connect to Redis on their own, after /ready may already say yes; a tile rendered before that is
    // not shared (the machine renders alone until Redis answers), so A is first asked whether it is connected.
    const sharedState = async (c: string) => (await podman(['exec', c, 'node', '-e', "fetch('http://127.0.0.1:8080/ping').then((r) => r.json()).then((j) => console.log(JSON.stringify(j.shared_cache)))"], 60_000)).trim();
    await waitFor(`${a} connected to the shared cache`, async () => (/"state":"connected"/.test(await sharedState(a)) ? true : undefined), 60_000);
    const first = await fetchInside(a, tile);
    assert.equal(first.status, 200);
    assert.doesNotMatch(first.headers['server-timing'] ?? '', /cache;desc="shared"/, 'A rendered it');
    // The docs' command listing the shared cache's keys, run in the Redis container, shows the tile's entry. A
    // stores it after answering, so on a busy machine the entry may land a moment after A's answer: B is asked
    // once it is there.
    const scan = /`redis-cli --scan\s+--pattern '([^']+)'`/.exec(DOCS)?.[1];
    assert.ok(scan, 'docs/deployment.md lists the keys with redis-cli --scan');
    const entries = async () => (await podman(['exec', `${project}_redis_1`, 'redis-cli', '--scan', '--pattern', scan])).split('\n').filter((k) => k && !k.startsWith('tsts:v1:lock:'));
    const keys = await waitFor('the image entry in Redis', async () => ((await entries()).length > 0 ? await entries() : undefined), 60_000).catch(async (err: Error) => {
      // What A's shared cache says (its state, and how many of its commands failed) is what tells a lost write from
      // a slow one.
      throw new Error(`${err.message}; ${a}'s shared cache: ${await sharedState(a).catch((e: Error) => e.message)}`);
    });
    assert.ok(keys.length > 0, `an image entry among the keys: ${keys.join(' ')}`);
    const second = await fetchInside(b, tile);
    assert.equal(second.status, 200);
    assert.match(second.headers['server-timing'] ?? '', /cache;desc="shared"/, 'B found it in the shared cache');
    assert.equal(second.sha256, first.sha256);
  });

  test('nginx balances over both: each instance logs some of the request ids sent through nginx, and answers with it', async () => {
    const answer = await get(`${url}/styles/osm-liberty/5/16/10.png`, { 'x-request-id': `image-test-${process.pid}` });
    assert.equal(answer.status, 200);
    assert.equal(answer.headers.get('x-request-id'), `image-test-${process.pid}`);
    assert.equal(PNG.sync.read(answer.body).width, 512);
    const ids = Array.from({ length: 8 }, (_, i) => `lb-${process.pid}-${i}`);
    for (const id of ids) {
      const style = await get(`${url}/styles/osm-liberty/style.json`, { 'x-request-id': id });
      assert.equal(style.status, 200);
      assert.equal(style.headers.get('x-request-id'), id);
    }
    // Each instance's access log (podman logs) names the ids of the requests it answered.
    const logged = async (c: string) => {
      const r = await podmanRun(['logs', c], 60_000);
      return ids.filter((id) => `${r.stdout}${r.stderr}`.includes(`"req_id":"${id}"`));
    };
    const [byA, byB] = [await logged(a), await logged(b)];
    assert.ok(byA.length > 0, `instance A answered none of ${ids.length} requests`);
    assert.ok(byB.length > 0, `instance B answered none of ${ids.length} requests`);
    assert.deepEqual([...byA, ...byB].sort(), [...ids].sort(), 'each request answered by exactly one instance');
  });
});
