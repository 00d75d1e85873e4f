// az:// sources against Azurite's blob service (Microsoft's emulator, which checks SharedKey signatures), with
// the provider proofs of helpers/storage-proofs.ts. The connection string comes from the environment
// (AZURE_STORAGE_CONNECTION_STRING) for the server under test; the wrong-credentials case names a wrong account
// key in the source itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AZURITE_ACCOUNT, AZURITE_KEY, readFixture, startAzurite, type AzuriteServer } from './helpers/object-storage.js';
import { getJson, request, storedPmtilesTile } from './helpers/foundation.js';
import { fixture, runCli, startServer, writeTempConfig } from './helpers/server.js';
import { OMT, storageProofs, tileAt } from './helpers/storage-proofs.js';

const COG = fixture('cog/test-rgb.cog.tif');

let azurite: AzuriteServer;

const ctx = storageProofs(async () => {
  azurite = await startAzurite();
  const wrongKey = Buffer.from('not the account key at all, but base64 all the same').toString('base64');
  let proxied = '';
  return {
    scheme: 'az',
    bucket: 'tiles',
    port: azurite.port,
    put: (key, body) => azurite.put('tiles', key, body),
    keys: (endpoint) => {
      proxied = azurite.connectionString(`${endpoint}/${AZURITE_ACCOUNT}`);
      return '';
    },
    wrongKeys: (endpoint) => `endpoint = "${endpoint}/${AZURITE_ACCOUNT}"\naccount = "${AZURITE_ACCOUNT}"\naccount_key = "${wrongKey}"`,
    get env() {
      return { AZURE_STORAGE_CONNECTION_STRING: proxied };
    },
    deniedReason: /AuthorizationFailure|AuthenticationFailed|Server failed to authenticate.*HTTP 403/,
    missingReason: /BlobNotFound.*HTTP 404/,
    stop: () => azurite.stop(),
  };
});

/** Starts a server with one az:// source written with `keys`, checks a tile against the local file, stops it. */
async function servesWith(keys: string, env: Record<string, string> = {}): Promise<void> {
  const svc = await startServer({ env: { AZURE_STORAGE_CONNECTION_STRING: '', ...env }, toml: `[server]\ndisable_render = true\n[[sources]]\nid = "az"\ntype = "pmtiles"\npath = "az://tiles/planet/omt.pmtiles"\n${keys}\n` });
  try {
    const r = await request(svc.url, '/data/az/1/0/1.pbf', { headers: { 'Accept-Encoding': 'gzip' }, timeoutMs: 20_000 });
    assert.equal(r.status, 200, r.body.toString());
    assert.ok(r.body.equals((await storedPmtilesTile(OMT, 1, 0, 1))!));
  } finally {
    await svc.stop();
  }
}

test('the other ways to authenticate: a read-only SAS, a connection string in the source, a public container without credentials', async () => {
  const { proxy } = ctx();
  const endpoint = `${proxy.url}/${AZURITE_ACCOUNT}`;
  await servesWith(`endpoint = "${endpoint}"\naccount = "${AZURITE_ACCOUNT}"\nsas_token = "\${SAS}"`, { SAS: azurite.readOnlySas('tiles') });
  await servesWith('connection_string = "${CONN}"', { CONN: azurite.connectionString(endpoint) });
  await azurite.put('public', 'planet/omt.pmtiles', readFixture(OMT));
  await azurite.makePublic('public');
  const svc = await startServer({
    env: { AZURE_STORAGE_CONNECTION_STRING: '' },
    toml: `[server]\ndisable_render = true\n[[sources]]\nid = "open"\ntype = "pmtiles"\npath = "az://public/planet/omt.pmtiles"\nendpoint = "${endpoint}"\nanonymous = true\n`,
  });
  try {
    const r = await request(svc.url, '/data/open/1/0/1.pbf', { headers: { 'Accept-Encoding': 'gzip' }, timeoutMs: 20_000 });
    assert.equal(r.status, 200);
    assert.ok(r.body.equals((await storedPmtilesTile(OMT, 1, 0, 1))!));
  } finally {
    await svc.stop();
  }
});

/** No Azure credentials of any kind in the environment of the server under test. */
const NO_AZURE = { AZURE_STORAGE_CONNECTION_STRING: '', AZURE_STORAGE_ACCOUNT: '', AZURE_STORAGE_KEY: '', AZURE_STORAGE_ACCESS_KEY: '', AZURE_STORAGE_SAS_TOKEN: '' };

test('no credentials found: unsigned reads of a public container when an endpoint names it; without account or endpoint, start-up stops with one line', async () => {
  const { proxy } = ctx();
  await azurite.put('public', 'planet/omt.pmtiles', readFixture(OMT));
  await azurite.makePublic('public');
  const source = (extra: string) => `[server]\ndisable_render = true\n[[sources]]\nid = "open"\ntype = "pmtiles"\npath = "az://public/planet/omt.pmtiles"\n${extra}`;
  const svc = await startServer({ env: NO_AZURE, toml: source(`endpoint = "${proxy.url}/${AZURITE_ACCOUNT}"\n`) });
  try {
    const r = await request(svc.url, '/data/open/1/1/0.pbf', { headers: { 'Accept-Encoding': 'gzip' }, timeoutMs: 20_000 });
    assert.equal(r.status, 200, r.body.toString());
    assert.ok(r.body.equals((await storedPmtilesTile(OMT, 1, 1, 0))!));
  } finally {
    await svc.stop();
  }
  const r = await runCli(['--config', writeTempConfig(source('')), '--port', '0', '--workers', '1'], NO_AZURE);
  const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
  assert.notEqual(r.code, 0);
  assert.equal(lines.length, 1, lines.join('\n'));
  assert.match(lines[0], /source "open".*az:\/\/public\/planet\/omt\.pmtiles.*no Azure account/);
});

/** Serves the container's COG with `keys` (and `env`) beside the local file, and checks their tiles are the same bytes. */
async function cogServesWith(keys: string, env: Record<string, string>): Promise<void> {
  const svc = await startServer({
    env: { AZURE_STORAGE_CONNECTION_STRING: '', ...env },
    toml: `[server]\ndisable_render = true\n[[sources]]\nid = "cog-az"\ntype = "cog"\npath = "az://tiles/rasters/test-rgb.cog.tif"\n${keys}\n[[sources]]\nid = "cog-local"\ntype = "cog"\npath = "${COG}"\n`,
  });
  try {
    const remote = await getJson<{ bounds: number[]; center: number[]; minzoom: number; maxzoom: number }>(svc.url, '/data/cog-az.json');
    const local = await getJson<{ bounds: number[]; maxzoom: number }>(svc.url, '/data/cog-local.json');
    assert.equal(remote.status, 200);
    assert.deepEqual(remote.json.bounds, local.json.bounds);
    assert.equal(remote.json.maxzoom, local.json.maxzoom);
    const [lon, lat] = remote.json.center;
    for (const z of [remote.json.maxzoom, Math.max(remote.json.minzoom, remote.json.maxzoom - 2)]) {
      const [x, y] = tileAt(lon, lat, z);
      const a = await request(svc.url, `/data/cog-az/${z}/${x}/${y}.png`, { timeoutMs: 30_000 });
      const b = await request(svc.url, `/data/cog-local/${z}/${x}/${y}.png`, { timeoutMs: 30_000 });
      assert.equal(a.status, 200, a.body.toString());
      assert.equal(b.status, 200);
      assert.ok(a.body.equals(b.body), `${z}/${x}/${y}: the remote COG tile is the local one`);
    }
  } finally {
    await svc.stop();
  }
}

test('a COG in the container is served through the COG source (GDAL /vsiaz/), the same bytes as the local file', async () => {
  await azurite.put('tiles', 'rasters/test-rgb.cog.tif', readFixture(COG));
  // GDAL reads the connection string from the environment itself, BlobEndpoint included (Azurite, not Azure).
  await cogServesWith('', { AZURE_STORAGE_CONNECTION_STRING: azurite.connectionString() });
});

test("a COG source's own endpoint with an account key, or with a read-only SAS, reaches GDAL (nothing in the environment)", async () => {
  await azurite.put('tiles', 'rasters/test-rgb.cog.tif', readFixture(COG));
  const endpoint = `http://127.0.0.1:${azurite.port}/${AZURITE_ACCOUNT}`;
  await cogServesWith(`endpoint = "${endpoint}"\naccount = "${AZURITE_ACCOUNT}"\naccount_key = "\${KEY}"`, { KEY: AZURITE_KEY });
  await cogServesWith(`endpoint = "${endpoint}"\naccount = "${AZURITE_ACCOUNT}"\nsas_token = "\${SAS}"`, { SAS: azurite.readOnlySas('tiles') });
});

test('the CLI serves an az:// argument with AZURE_STORAGE_CONNECTION_STRING from the environment', async () => {
  const cli = await startServer({ files: ['az://tiles/planet/omt.pmtiles'], env: { AZURE_STORAGE_CONNECTION_STRING: azurite.connectionString() } });
  try {
    const tj = await getJson<{ maxzoom: number }>(cli.url, '/data/omt.json');
    assert.equal(tj.status, 200);
    assert.equal(tj.json.maxzoom, 1);
    for (const [z, x, y] of [
      [0, 0, 0],
      [1, 1, 0],
    ]) {
      const r = await request(cli.url, `/data/omt/${z}/${x}/${y}.pbf`, { headers: { 'Accept-Encoding': 'gzip' }, timeoutMs: 20_000 });
      assert.equal(r.status, 200, r.body.toString());
      assert.ok(r.body.equals((await storedPmtilesTile(OMT, z, x, y))!));
    }
  } finally {
    await cli.stop();
  }
});
