// Runs s3rver (npm `@20minutes/s3rver`, the S3 server of the object-storage tests and the storage bench) as a
// child process of a test: `node s3rver-main.cjs DIRECTORY PORT ACCESS_KEY_ID SECRET_ACCESS_KEY BUCKET...`.
// The package ships no executable of its own, and its one account has the published key pair S3RVER/S3RVER:
// that pair is revoked and the test's own (random) pair put in its place, so only the test's secret signs.
// s3rver serves unsigned requests to anyone; here a bucket is private, as an S3 bucket is by default: a request
// without a signature is refused with S3's AccessDenied (403). A bucket named `public:NAME` is public for
// reading instead: unsigned GET and HEAD are served, and a signed read is refused (AccessDenied), so a test sees
// that its client really sent no signature. Writing to it still takes the signed key (the test's uploads).
'use strict';
const S3rver = require('@20minutes/s3rver');
const AWSAccount = require('@20minutes/s3rver/lib/models/account');
const S3Error = require('@20minutes/s3rver/lib/models/error');

const [directory, port, accessKeyId, secretAccessKey, ...bucketArgs] = process.argv.slice(2);
const buckets = bucketArgs.map((b) => b.replace(/^public:/, ''));
const publicBuckets = new Set(bucketArgs.filter((b) => b.startsWith('public:')).map((b) => b.slice('public:'.length)));
if (!directory || !port || !accessKeyId || !secretAccessKey) {
  console.error('usage: node s3rver-main.cjs DIRECTORY PORT ACCESS_KEY_ID SECRET_ACCESS_KEY BUCKET...');
  process.exit(2);
}
AWSAccount.DUMMY_ACCOUNT.revokeAccessKey('S3RVER');
AWSAccount.DUMMY_ACCOUNT.createKeyPair(accessKeyId, secretAccessKey);

const server = new S3rver({ directory, address: '127.0.0.1', port: Number(port), silent: true, configureBuckets: buckets.map((name) => ({ name, configs: [] })) });
// First in the chain, before s3rver's router (whose authentication lets unsigned requests through); the
// error is written as S3's XML by s3rver's own error handler.
server.middleware.unshift((ctx, next) => {
  const signed = 'authorization' in ctx.headers || 'X-Amz-Algorithm' in ctx.query || 'Signature' in ctx.query;
  const bucket = decodeURIComponent(ctx.path.split('/')[1] ?? '');
  const read = ctx.method === 'GET' || ctx.method === 'HEAD';
  if (publicBuckets.has(bucket) && read) {
    if (signed) throw new S3Error('AccessDenied', 'Access Denied: this test bucket serves unsigned reads only');
    return next();
  }
  if (!signed) throw new S3Error('AccessDenied', 'Access Denied');
  return next();
});
server.run().then(
  (address) => console.log(`s3rver listening on ${address.address}:${address.port}`),
  (err) => {
    console.error(`s3rver failed to start: ${err.message}`);
    process.exit(1);
  },
);
