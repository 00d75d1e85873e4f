// az:// sources against Azurite's blob service (Microsoft's emulator, which checks SharedKey signatures), with
// the provider proofs of helpers/storage-proofs.ts. The connection string comes from the environment
// (AZURE_STORAGE_CONNECTION_STRING) for the server under test; the wrong-credentials case names a wrong account
// key in the source itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AZURITE_ACCOUNT, readFixture, startAzurite, type AzuriteServer } from './helpers/object-storage.js';
import { request, storedPmtilesTile } from './helpers/foundation.js';
import { startServer } from './helpers/server.js';
import { OMT, storageProofs } from './helpers/storage-proofs.js';

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
