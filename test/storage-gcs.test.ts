// gs:// sources read through Cloud Storage's S3-compatible XML API (the AWS SDK signing with an HMAC key, as
// src/sources/object-store/gcs.ts explains). No Cloud Storage emulator runs here (the official ones need Go or
// Java and the JSON API), so the XML-API requests go to s3rver's S3 server (npm), which checks the HMAC (SigV4)
// signature the same way: region "auto", path-style, no SDK checksum headers, keys from GS_ACCESS_KEY_ID and
// GS_SECRET_ACCESS_KEY. The provider proofs are those of helpers/storage-proofs.ts.
import { startS3Server } from './helpers/object-storage.js';
import { storageProofs } from './helpers/storage-proofs.js';

storageProofs(async () => {
  const s3 = await startS3Server(['gcs-tiles']);
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
