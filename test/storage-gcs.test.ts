// gs:// sources read through Cloud Storage's S3-compatible XML API (the AWS SDK signing with an HMAC key, as
// src/sources/object-store/gcs.ts explains). No Cloud Storage emulator runs here (the official ones need Go or
// Java and the JSON API), so the XML-API requests go to moto's S3 server, which checks the HMAC (SigV4)
// signature the same way: region "auto", path-style, no SDK checksum headers, keys from GS_ACCESS_KEY_ID and
// GS_SECRET_ACCESS_KEY. The provider proofs are those of helpers/storage-proofs.ts.
import { startMoto } from './helpers/object-storage.js';
import { storageProofs } from './helpers/storage-proofs.js';

storageProofs(async () => {
  const moto = await startMoto();
  await moto.createBucket('gcs-tiles');
  return {
    scheme: 'gs',
    bucket: 'gcs-tiles',
    port: moto.port,
    put: (key, body) => moto.put('gcs-tiles', key, body),
    // The HMAC key comes from the environment (GS_ACCESS_KEY_ID / GS_SECRET_ACCESS_KEY), the endpoint from the source.
    keys: (endpoint) => `endpoint = "${endpoint}"`,
    wrongKeys: (endpoint) => `endpoint = "${endpoint}"\naccess_key_id = "\${GS_ACCESS_KEY_ID}"\nsecret_access_key = "not-the-secret"`,
    env: { GS_ACCESS_KEY_ID: moto.accessKeyId, GS_SECRET_ACCESS_KEY: moto.secretAccessKey },
    deniedReason: /SignatureDoesNotMatch.*HTTP 403/,
    missingReason: /NoSuchKey.*HTTP 404/,
    stop: () => moto.stop(),
  };
});
