// gs:// sources read through Cloud Storage's S3-compatible XML API (the AWS SDK, as src/sources/object-store/gcs.ts
// explains). No Cloud Storage emulator runs here (the official ones need Go or Java and the JSON API), so the
// XML-API requests go to s3rver's S3 server (npm), which checks the HMAC (SigV4) signature the same way: region
// "auto", path-style, no SDK checksum headers, keys from GS_ACCESS_KEY_ID and GS_SECRET_ACCESS_KEY. The provider
// proofs are those of helpers/storage-proofs.ts. OAuth (GOOGLE_APPLICATION_CREDENTIALS) is shown against
// helpers/gcs-oauth.ts: a token endpoint that checks the service account's signed assertion and a proxy in front of
// s3rver that takes only the tokens it issued, standing in for Google's servers.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFixture, startS3Server, type S3Server } from './helpers/object-storage.js';
import { getJson, request, storedPmtilesTile, tempDir } from './helpers/foundation.js';
import { fixture, runCli, startServer, writeTempConfig } from './helpers/server.js';
import { serviceAccountFile, startGoogleStandIn, type GoogleStandIn, type ServiceAccount } from './helpers/gcs-oauth.js';
import { OMT, storageProofs, tileAt } from './helpers/storage-proofs.js';

let s3: S3Server;

storageProofs(async () => {
  // gcs-open is public: unsigned reads only (test/helpers/s3rver-main.cjs), where the OAuth proxy forwards to.
  s3 = await startS3Server(['gcs-tiles', 'public:gcs-open']);
  return {
    scheme: 'gs',
    bucket: 'gcs-tiles',
    port: s3.port,
    put: (key, body) => s3.put('gcs-tiles', key, body),
    // The HMAC key comes from the environment (GS_ACCESS_KEY_ID / GS_SECRET_ACCESS_KEY), the endpoint from the source.
    keys: (endpoint) => `endpoint = "${endpoint}"`,
    wrongKeys: (endpoint) => `endpoint = "${endpoint}"\naccess_key_id = "\${GS_ACCESS_KEY_ID}"\nsecret_access_key = "not-the-secret"`,
    env: { GS_ACCESS_KEY_ID: s3.accessKeyId, GS_SECRET_ACCESS_KEY: s3.secretAccessKey },
    deniedReason: /SignatureDoesNotMatch.*HTTP 403/,
    missingReason: /NoSuchKey.*HTTP 404/,
    stop: () => s3.stop(),
  };
});

const gz = { headers: { 'Accept-Encoding': 'gzip' }, timeoutMs: 20_000 };
/** No HMAC key, no AWS chain: what decides is GOOGLE_APPLICATION_CREDENTIALS (or nothing). */
const NO_KEYS = { GS_ACCESS_KEY_ID: '', GS_SECRET_ACCESS_KEY: '', GOOGLE_APPLICATION_CREDENTIALS: '', STORAGE_EMULATOR_HOST: '' };

async function assertTiles(base: string, id: string, tiles: number[][]): Promise<void> {
  for (const [z, x, y] of tiles) {
    const r = await request(base, `/data/${id}/${z}/${x}/${y}.pbf`, gz);
    assert.equal(r.status, 200, `${z}/${x}/${y}: ${r.body}`);
    assert.ok(r.body.equals((await storedPmtilesTile(OMT, z, x, y))!), `${z}/${x}/${y} is the stored tile`);
  }
}

describe('GOOGLE_APPLICATION_CREDENTIALS: OAuth access tokens from Google\'s auth library', () => {
  let google: GoogleStandIn;
  let reader: ServiceAccount;
  let outsider: ServiceAccount;
  let stranger: ServiceAccount;
  const source = (id: string, endpoint: string, path = 'gs://gcs-open/planet/omt.pmtiles') => `[server]\ndisable_render = true\n[cache]\nenabled = false\n[[sources]]\nid = "${id}"\ntype = "pmtiles"\npath = "${path}"\nendpoint = "${endpoint}"\n`;

  before(async () => {
    await s3.put('gcs-open', 'planet/omt.pmtiles', readFixture(OMT));
    google = await startGoogleStandIn(s3.port);
    const dir = tempDir('tsts-gcs-oauth-');
    reader = serviceAccountFile(dir, 'tiles-reader@tsts-project.iam.gserviceaccount.com', google.tokenUri);
    outsider = serviceAccountFile(dir, 'other-team@tsts-project.iam.gserviceaccount.com', google.tokenUri);
    // Its key is not the one the token endpoint knows for it: an assertion Google would refuse.
    stranger = serviceAccountFile(dir, 'stranger@tsts-project.iam.gserviceaccount.com', google.tokenUri);
    google.addAccount(reader, true);
    google.addAccount(outsider, false);
    google.addAccount({ ...stranger, publicKey: outsider.publicKey }, true);
  });
  after(() => google?.close());

  test('tiles are the local file\'s bytes with the Bearer token, one token for many reads', async () => {
    const svc = await startServer({ env: { ...NO_KEYS, GOOGLE_APPLICATION_CREDENTIALS: reader.file }, toml: source('oauth', google.endpoint) });
    // Counted from here: opening the source (header, metadata) has fetched its token.
    const issued = google.issuedCount;
    const forwarded = google.forwarded;
    try {
      await assertTiles(svc.url, 'oauth', [
        [0, 0, 0],
        [1, 0, 0],
        [1, 1, 1],
      ]);
      assert.ok(google.forwarded - forwarded >= 3, `requests the proxy let through: ${google.forwarded - forwarded}`);
      assert.equal(google.issuedCount - issued, 0, 'the library\'s cached token serves every read while it is good');
    } finally {
      await svc.stop();
    }
  });

  test('a token that runs out is refreshed by the library before the next read', async () => {
    google.setLifetime(2);
    const issued = google.issuedCount;
    const svc = await startServer({ env: { ...NO_KEYS, GOOGLE_APPLICATION_CREDENTIALS: reader.file }, toml: source('oauth', google.endpoint) });
    try {
      await assertTiles(svc.url, 'oauth', [[1, 0, 1]]);
      // Past the first token's life: the proxy refuses it now, so a tile means a new token was fetched.
      await new Promise((r) => setTimeout(r, 2500));
      await assertTiles(svc.url, 'oauth', [[1, 1, 0]]);
      assert.ok(google.issuedCount - issued >= 2, `tokens issued: ${google.issuedCount - issued}`);
    } finally {
      google.setLifetime(3600);
      await svc.stop();
    }
  });

  test('a refused assertion, a missing key file, an expired token and an account without access each stop start-up with one line', async () => {
    const url = 'gs://gcs-open/planet/omt.pmtiles';
    const config = writeTempConfig(source('guarded', google.endpoint));
    const startUp = async (file: string) => {
      const r = await runCli(['--config', config, '--port', '0', '--workers', '1'], { ...NO_KEYS, GOOGLE_APPLICATION_CREDENTIALS: file });
      const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
      assert.notEqual(r.code, 0);
      assert.equal(lines.length, 1, lines.join('\n'));
      assert.match(lines[0], /source "guarded"/);
      assert.ok(lines[0].includes(url), lines[0]);
      return lines[0];
    };
    assert.match(await startUp(stranger.file), /invalid_grant: Invalid JWT Signature/);
    assert.match(await startUp('/nonexistent/tiles-reader.json'), /GOOGLE_APPLICATION_CREDENTIALS: .*no such file/i);
    google.issueStale(true);
    try {
      assert.match(await startUp(reader.file), /AuthenticationRequired: Invalid Credentials: the access token expired \(HTTP 401\)/);
    } finally {
      google.issueStale(false);
    }
    assert.match(await startUp(outsider.file), /AccessDenied: other-team@.* does not have storage\.objects\.get access.*\(HTTP 403\)/);
  });

  test('an HMAC key comes first; with no credentials at all the reads are unsigned (a public bucket)', async () => {
    // The OAuth file would be refused (its key is unknown): a served tile shows the HMAC key was used instead.
    const keyed = await startServer({
      env: { ...NO_KEYS, GS_ACCESS_KEY_ID: s3.accessKeyId, GS_SECRET_ACCESS_KEY: s3.secretAccessKey, GOOGLE_APPLICATION_CREDENTIALS: stranger.file },
      toml: source('keyed', s3.endpoint, 'gs://gcs-tiles/planet/omt.pmtiles'),
    });
    try {
      await assertTiles(keyed.url, 'keyed', [[1, 0, 1]]);
    } finally {
      await keyed.stop();
    }
    // The public bucket refuses signed reads, so a tile shows the request went unsigned.
    const open = await startServer({ env: NO_KEYS, toml: source('open', s3.endpoint) });
    try {
      await assertTiles(open.url, 'open', [[1, 1, 1]]);
    } finally {
      await open.stop();
    }
  });

  test('the CLI serves a gs:// argument: GOOGLE_APPLICATION_CREDENTIALS, the endpoint from STORAGE_EMULATOR_HOST', async () => {
    const cli = await startServer({
      files: ['gs://gcs-open/planet/omt.pmtiles'],
      env: { ...NO_KEYS, GOOGLE_APPLICATION_CREDENTIALS: reader.file, STORAGE_EMULATOR_HOST: google.endpoint.replace(/^http:\/\//, '') },
    });
    try {
      await assertTiles(cli.url, 'omt', [
        [0, 0, 0],
        [1, 1, 0],
      ]);
    } finally {
      await cli.stop();
    }
  });
});

// GDAL's /vsigs/ signs an HMAC key with Google's legacy GOOG1 scheme (3.6 on Debian 12 and 3.10 on Debian 13
// alike, seen with gdalinfo), which s3rver refuses ("InvalidArgument: Unsupported Authorization Type"): a keyed
// /vsigs/ read cannot be shown here. An unsigned one can, from the public bucket, and it shows GDAL finding its
// endpoint through STORAGE_EMULATOR_HOST as gs:// PMTiles do.
test('a COG in a public bucket through gs:// (GDAL /vsigs/), the endpoint from STORAGE_EMULATOR_HOST: the same pixels as the local file', async () => {
  const COG = fixture('cog/test-rgb.cog.tif');
  await s3.put('gcs-open', 'rasters/test-rgb.cog.tif', readFixture(COG));
  const svc = await startServer({
    env: { ...NO_KEYS, STORAGE_EMULATOR_HOST: `127.0.0.1:${s3.port}` },
    toml: `[server]\ndisable_render = true\n[[sources]]\nid = "cog-gs"\ntype = "cog"\npath = "gs://gcs-open/rasters/test-rgb.cog.tif"\nanonymous = true\n[[sources]]\nid = "cog-local"\ntype = "cog"\npath = "${COG}"\n`,
  });
  try {
    const remote = await getJson<{ bounds: number[]; center: number[]; maxzoom: number }>(svc.url, '/data/cog-gs.json');
    const local = await getJson<{ bounds: number[]; maxzoom: number }>(svc.url, '/data/cog-local.json');
    assert.equal(remote.status, 200);
    assert.deepEqual(remote.json.bounds, local.json.bounds);
    const [lon, lat] = remote.json.center;
    const z = remote.json.maxzoom;
    const [x, y] = tileAt(lon, lat, z);
    const a = await request(svc.url, `/data/cog-gs/${z}/${x}/${y}.png`, { timeoutMs: 30_000 });
    const b = await request(svc.url, `/data/cog-local/${z}/${x}/${y}.png`, { timeoutMs: 30_000 });
    assert.equal(a.status, 200, a.body.toString());
    assert.ok(a.body.equals(b.body), `${z}/${x}/${y}: the remote COG tile is the local one`);
  } finally {
    await svc.stop();
  }
});
