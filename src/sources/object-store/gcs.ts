// gs:// objects through Cloud Storage's S3-compatible XML API (https://storage.googleapis.com), signed by the
// AWS SDK with an HMAC key of a service account. Chosen over `@google-cloud/storage` because the reads are plain
// ranged GETs with If-Match, which the XML API serves exactly as S3 does: one code path (retries, ETag pinning,
// errors) for both, one SDK fewer, and the same HMAC key works for COG/VRT sources through GDAL's /vsigs/
// (GS_ACCESS_KEY_ID / GS_SECRET_ACCESS_KEY are GDAL's own names for it). The cost: OAuth service-account files
// (GOOGLE_APPLICATION_CREDENTIALS) are not read for PMTiles; docs/storage-gcs.md says how to make the HMAC key.
import type { S3Client } from '@aws-sdk/client-s3';
import { s3Client, type S3Options } from './s3.js';

export const GCS_XML_ENDPOINT = 'https://storage.googleapis.com';

export function gcsClient(opts: S3Options): Promise<S3Client> {
  const accessKeyId = opts.access_key_id ?? process.env.GS_ACCESS_KEY_ID;
  const secretAccessKey = opts.secret_access_key ?? process.env.GS_SECRET_ACCESS_KEY;
  const keyed = accessKeyId !== undefined && secretAccessKey !== undefined;
  return s3Client(
    {
      ...opts,
      // Never the AWS chain: AWS keys in the environment are not Google's. No HMAC key: a public bucket.
      access_key_id: keyed ? accessKeyId : undefined,
      secret_access_key: keyed ? secretAccessKey : undefined,
      anonymous: opts.anonymous ?? !keyed,
      force_path_style: opts.force_path_style ?? true,
      profile: undefined,
    },
    // The XML API takes any region name ("auto" by Google's guide) and does not know the SDK's newer checksum headers.
    { region: 'auto', endpoint: GCS_XML_ENDPOINT, checksums: false },
  );
}
