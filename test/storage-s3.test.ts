// s3:// sources against s3rver, an S3 server from npm that checks SigV4 signatures (from the real AWS SDK; a wrong
// secret is refused): the provider proofs of helpers/storage-proofs.ts, and a COG in the same bucket served through the
// COG source, read by GDAL's /vsis3/ from the same server.
import { test } from 'node:test';
import gdal from 'gdal-async';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fixture, startServer } from './helpers/server.js';
import { startPostgres } from './helpers/postgres.js';
import { getJson, request, storedPmtilesTile, tempDir, waitFor } from './helpers/foundation.js';
import { readFixture, startS3Server, type S3Server } from './helpers/object-storage.js';
import { OMT, storageProofs, tileAt } from './helpers/storage-proofs.js';

const COG = fixture('cog/test-rgb.cog.tif');

let s3: S3Server;

const ctx = storageProofs(
  async () => {
    // "open" is a public bucket: unsigned reads only, a signed read refused (test/helpers/s3rver-main.cjs).
    s3 = await startS3Server(['tiles', 'public:open']);
    return {
      scheme: 's3',
      bucket: 'tiles',
      port: s3.port,
      put: (key, body) => s3.put('tiles', key, body),
      keys: (endpoint) => `endpoint = "${endpoint}"\nregion = "us-east-1"\naccess_key_id = "\${S3_KEY}"\nsecret_access_key = "\${S3_SECRET}"`,
      wrongKeys: (endpoint) => `endpoint = "${endpoint}"\nregion = "us-east-1"\naccess_key_id = "\${S3_KEY}"\nsecret_access_key = "not-the-secret"`,
      env: { S3_KEY: s3.accessKeyId, S3_SECRET: s3.secretAccessKey, S3_ENDPOINT: s3.endpoint },
      deniedReason: /SignatureDoesNotMatch.*HTTP 403/,
      missingReason: /NoSuchKey.*HTTP 404/,
      stop: () => s3.stop(),
    };
  },
  async (store, endpoint) => {
    await store.put('rasters/test-rgb.cog.tif', readFixture(COG));
    await store.put('rasters/second.cog.tif', readFixture(COG));
    // GDAL reads through the proxy too, so that the COG's outage can be shown after the PMTiles proofs.
    return `
[[sources]]
id = "cog-s3"
type = "cog"
path = "s3://tiles/rasters/test-rgb.cog.tif"
endpoint = "${endpoint}"
region = "us-east-1"
access_key_id = "\${S3_KEY}"
secret_access_key = "\${S3_SECRET}"
[[sources]]
id = "cog-s3-second"
type = "cog"
path = "s3://tiles/rasters/second.cog.tif"
endpoint = "${endpoint}"
region = "us-east-1"
access_key_id = "\${S3_KEY}"
secret_access_key = "\${S3_SECRET}"
[[sources]]
id = "cog-local"
type = "cog"
path = "${COG}"
`;
  },
);

test('a COG in the bucket is served through the COG source (GDAL /vsis3/), the same pixels as the local file', async () => {
  const { server } = ctx();
  const remote = await getJson<{ bounds: number[]; center: number[]; maxzoom: number; minzoom: number }>(server.url, '/data/cog-s3.json');
  const local = await getJson<{ bounds: number[]; center: number[]; maxzoom: number }>(server.url, '/data/cog-local.json');
  assert.equal(remote.status, 200);
  assert.deepEqual(remote.json.bounds, local.json.bounds);
  assert.equal(remote.json.maxzoom, local.json.maxzoom);
  const [lon, lat] = remote.json.center;
  for (const z of [remote.json.maxzoom, Math.max(remote.json.minzoom, remote.json.maxzoom - 2)]) {
    const [x, y] = tileAt(lon, lat, z);
    const a = await request(server.url, `/data/cog-s3/${z}/${x}/${y}.png`, { timeoutMs: 30_000 });
    const b = await request(server.url, `/data/cog-local/${z}/${x}/${y}.png`, { timeoutMs: 30_000 });
    assert.equal(a.status, 200, a.body.toString());
    assert.equal(b.status, 200);
    assert.ok(a.body.equals(b.body), `${z}/${x}/${y}: the remote COG tile is the local one`);
  }
});

test('a COG whose store is stopped answers 503 for that source, and serves again when the store is back', async () => {
  const { server, proxy } = ctx();
  // The second COG was opened at start-up (its header read) but no tile of it was drawn: GDAL has no pixels of it.
  const tj = await getJson<{ center: number[]; maxzoom: number }>(server.url, '/data/cog-s3-second.json');
  const [lon, lat] = tj.json.center;
  const z = tj.json.maxzoom;
  const [x, y] = tileAt(lon, lat, z);
  const local = await request(server.url, `/data/cog-local/${z}/${x}/${y}.png`, { timeoutMs: 30_000 });
  await proxy.stop();
  try {
    const down = await request(server.url, `/data/cog-s3-second/${z}/${x}/${y}.png`, { timeoutMs: 30_000 });
    assert.equal(down.status, 503, `${down.status}: ${down.body.length} bytes`);
    assert.ok(Number(down.headers['retry-after']) > 0);
    assert.match(JSON.parse(down.body.toString()).detail as string, /cannot read s3:\/\/tiles\/rasters\/second\.cog\.tif/);
    assert.equal((await request(server.url, `/data/cog-local/${z}/${x}/${y}.png`, { timeoutMs: 30_000 })).status, 200, 'the local COG keeps serving');
    // Readiness names the raster source as it names a remote PMTiles source, with GDAL's reason.
    const ready = await request(server.url, '/ready', { timeoutMs: 20_000 });
    assert.equal(ready.status, 503);
    const body = JSON.parse(ready.body.toString()) as { detail: string; components: { name: string; state: string }[] };
    assert.match(body.detail, /source "cog-s3-second" is unreachable \(cannot read s3:\/\/tiles\/rasters\/second\.cog\.tif/);
    assert.match(body.components.find((c) => c.name === 'source "cog-s3-second"')?.state ?? '', /^unreachable/);
    assert.equal(body.components.find((c) => c.name === 'source "cog-s3"')?.state, 'connected', 'only the source whose read failed');
  } finally {
    await proxy.start();
  }
  const back = await waitFor('the COG tile once the store is back', async () => {
    const r = await request(server.url, `/data/cog-s3-second/${z}/${x}/${y}.png`, { timeoutMs: 30_000 });
    return r.status === 200 ? r : undefined;
  });
  assert.ok(back.body.equals(local.body));
  // The tile read cleared it: ready again.
  assert.equal((await request(server.url, '/ready', { timeoutMs: 20_000 })).status, 200);
});

test('the CLI serves an s3:// argument with the SDK\'s default chain: AWS_ENDPOINT_URL, keys and region from the environment', async () => {
  const { store } = ctx();
  const env = store.env as Record<string, string>;
  const cli = await startServer({
    files: ['s3://tiles/planet/omt.pmtiles'],
    env: { AWS_ENDPOINT_URL: env.S3_ENDPOINT, AWS_ACCESS_KEY_ID: env.S3_KEY, AWS_SECRET_ACCESS_KEY: env.S3_SECRET, AWS_REGION: 'us-east-1', AWS_CONFIG_FILE: '/nonexistent', AWS_SHARED_CREDENTIALS_FILE: '/nonexistent' },
  });
  try {
    const tj = await getJson<{ tiles: string[]; maxzoom: number }>(cli.url, '/data/omt.json');
    assert.equal(tj.status, 200);
    assert.equal(tj.json.maxzoom, 1);
    const r = await request(cli.url, '/data/omt/1/1/0.pbf', { headers: { 'Accept-Encoding': 'gzip' }, timeoutMs: 20_000 });
    assert.equal(r.status, 200);
    assert.ok(r.body.equals((await storedPmtilesTile(OMT, 1, 1, 0))!));
  } finally {
    await cli.stop();
  }
});

test('a profile of the shared credentials file (AWS_SHARED_CREDENTIALS_FILE), named by the source', async () => {
  const { store } = ctx();
  const env = store.env as Record<string, string>;
  const credentials = path.join(tempDir('tsts-aws-'), 'credentials');
  writeFileSync(credentials, `[reader]\naws_access_key_id = ${env.S3_KEY}\naws_secret_access_key = ${env.S3_SECRET}\n`);
  const awsEnv = { AWS_SHARED_CREDENTIALS_FILE: credentials, AWS_CONFIG_FILE: '/nonexistent', AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_PROFILE: '' };
  const svc = await startServer({
    env: awsEnv,
    toml: `[server]\ndisable_render = true\n[[sources]]\nid = "profiled"\ntype = "pmtiles"\npath = "s3://tiles/planet/omt.pmtiles"\nendpoint = "${env.S3_ENDPOINT}"\nregion = "us-east-1"\nprofile = "reader"\n`,
  });
  try {
    const r = await request(svc.url, '/data/profiled/1/0/1.pbf', { headers: { 'Accept-Encoding': 'gzip' }, timeoutMs: 20_000 });
    assert.equal(r.status, 200, r.body.toString());
    assert.ok(r.body.equals((await storedPmtilesTile(OMT, 1, 0, 1))!));
  } finally {
    await svc.stop();
  }
});

test('anonymous = true reads a public bucket unsigned (the bucket refuses signed reads), whatever keys the environment holds', async () => {
  await s3.put('open', 'planet/omt.pmtiles', readFixture(OMT));
  const svc = await startServer({
    // Valid keys in the environment: the SDK's chain would sign with them, and the bucket would refuse.
    env: { AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey, AWS_CONFIG_FILE: '/nonexistent', AWS_SHARED_CREDENTIALS_FILE: '/nonexistent' },
    toml: `[server]\ndisable_render = true\n[[sources]]\nid = "public"\ntype = "pmtiles"\npath = "s3://open/planet/omt.pmtiles"\nendpoint = "${s3.endpoint}"\nregion = "us-east-1"\nanonymous = true\n`,
  });
  try {
    for (const [z, x, y] of [
      [0, 0, 0],
      [1, 1, 0],
    ]) {
      const r = await request(svc.url, `/data/public/${z}/${x}/${y}.pbf`, { headers: { 'Accept-Encoding': 'gzip' }, timeoutMs: 20_000 });
      assert.equal(r.status, 200, r.body.toString());
      assert.ok(r.body.equals((await storedPmtilesTile(OMT, z, x, y))!));
    }
  } finally {
    await svc.stop();
  }
});

test('an out-of-database raster catalogue returning s3:// paths: GDAL reads them with AWS_ENDPOINT_URL and keys from the environment, the tile is the local file\'s', async () => {
  const db = await startPostgres();
  try {
    // The COG's footprint in web mercator, as the catalogue functions of test/sql/seed.sql expect.
    const ds = gdal.open(COG);
    const gt = ds.geoTransform!;
    const ct = new gdal.CoordinateTransformation(gdal.SpatialReference.fromProj4(ds.srs!.toProj4()), gdal.SpatialReference.fromEPSG(3857));
    const a = ct.transformPoint(gt[0], gt[3]);
    const b = ct.transformPoint(gt[0] + gt[1] * ds.rasterSize.x, gt[3] + gt[5] * ds.rasterSize.y);
    ds.close();
    const box = [Math.min(a.x, b.x), Math.min(a.y, b.y), Math.max(a.x, b.x), Math.max(a.y, b.y)];
    const add = (collection: string, file: string) => db.sql('INSERT INTO raster_files VALUES ($1, 1, $2, ST_MakeEnvelope($3, $4, $5, $6, 3857), NULL, NULL)', [collection, file, ...box]);
    // naip(): the file in the bucket; dem(?collection=local): the same file on disk. Same code path, one remote.
    await add('naip', 's3://tiles/rasters/test-rgb.cog.tif');
    await add('local', COG);
    const notTiff = path.join(tempDir('tsts-not-tiff-'), 'not-a-tiff.tif');
    writeFileSync(notTiff, 'this object is text, not a TIFF\n'.repeat(64));
    await s3.put('tiles', 'rasters/not-a-tiff.tif', readFileSync(notTiff));
    await add('broken', 's3://tiles/rasters/not-a-tiff.tif');
    await add('broken-local', notTiff);
    const svc = await startServer({
      env: { AWS_ENDPOINT_URL: s3.endpoint, AWS_ACCESS_KEY_ID: s3.accessKeyId, AWS_SECRET_ACCESS_KEY: s3.secretAccessKey, AWS_REGION: 'us-east-1', AWS_CONFIG_FILE: '/nonexistent', AWS_SHARED_CREDENTIALS_FILE: '/nonexistent' },
      toml: `[server]\ndisable_render = true\n[postgres]\nconnection_string = "${db.url}"\n[[postgres.outdb_rasters]]\nid = "naip"\nresampling = "nearest"\n[[postgres.outdb_rasters]]\nid = "dem"\nresampling = "nearest"\n[[sources]]\nid = "cog-local"\ntype = "cog"\npath = "${COG}"\n`,
    });
    try {
      const tj = await getJson<{ center: number[]; minzoom: number; maxzoom: number }>(svc.url, '/data/cog-local.json');
      const [lon, lat] = tj.json.center;
      for (const z of [tj.json.maxzoom, Math.max(tj.json.minzoom, tj.json.maxzoom - 2)]) {
        const [x, y] = tileAt(lon, lat, z);
        const remote = await request(svc.url, `/data/naip/${z}/${x}/${y}.png`, { timeoutMs: 30_000 });
        const local = await request(svc.url, `/data/dem/${z}/${x}/${y}.png?collection=local`, { timeoutMs: 30_000 });
        assert.equal(remote.status, 200, remote.body.toString());
        assert.equal(local.status, 200, local.body.toString());
        assert.ok(remote.body.equals(local.body), `${z}/${x}/${y}: the tile of the s3:// path is the local file's`);
      }
      // An object the store serves but that is no raster: the same failure as the same bytes on disk, not an outage.
      const [x, y] = tileAt(lon, lat, tj.json.maxzoom);
      const brokenRemote = await request(svc.url, `/data/dem/${tj.json.maxzoom}/${x}/${y}.png?collection=broken`, { timeoutMs: 30_000 });
      const brokenLocal = await request(svc.url, `/data/dem/${tj.json.maxzoom}/${x}/${y}.png?collection=broken-local`, { timeoutMs: 30_000 });
      assert.notEqual(brokenLocal.status, 200);
      assert.equal(brokenRemote.status, brokenLocal.status, `the s3:// object that is not a TIFF: ${brokenRemote.body}`);
      assert.equal(brokenRemote.headers['retry-after'], undefined);
      assert.equal((await request(svc.url, '/ready', { timeoutMs: 20_000 })).status, 200, 'readiness does not take it for a storage outage');
    } finally {
      await svc.stop();
    }
  } finally {
    db.destroy();
  }
});
