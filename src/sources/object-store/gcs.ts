// gs:// objects through Cloud Storage's S3-compatible XML API (https://storage.googleapis.com), read by the AWS
// SDK. Chosen over `@google-cloud/storage` because the reads are plain ranged GETs with If-Match, which the XML
// API serves exactly as S3 does: one code path (retries, ETag pinning, errors) for both, and one SDK fewer.
// Credentials, first found wins (docs/storage-gcs.md):
// 1. `anonymous = true`: unsigned requests (a public bucket).
// 2. An HMAC key of a service account (the source's keys, else GS_ACCESS_KEY_ID / GS_SECRET_ACCESS_KEY, GDAL's
//    own names for it, so the same key serves COG/VRT sources through /vsigs/): requests signed with SigV4.
// 3. GOOGLE_APPLICATION_CREDENTIALS: an OAuth access token from Google's auth library (google-token.ts), sent as
//    `Authorization: Bearer`; the request is otherwise unsigned, which is how the XML API takes OAuth.
// 4. Nothing: unsigned requests (a public bucket).
import type { S3Client } from '@aws-sdk/client-s3';
import { googleAccessTokens, type AccessTokens } from './google-token.js';
import { s3Client, type S3Options } from './s3.js';

/** An unset or empty variable is not given. */
const env = (name: string) => (process.env[name] === '' ? undefined : process.env[name]);

export const GCS_XML_ENDPOINT = 'https://storage.googleapis.com';

/**
 * The endpoint when the source names none: STORAGE_EMULATOR_HOST, the variable Google's client libraries read to
 * talk to another server (an emulator that serves the XML API, a test stand-in; "host:port" means http), else Google.
 */
function defaultEndpoint(): string {
  const host = env('STORAGE_EMULATOR_HOST');
  if (host === undefined) return GCS_XML_ENDPOINT;
  return /^https?:\/\//i.test(host) ? host : `http://${host}`;
}

/** How a gs:// source authenticates, by the order above. */
export type GcsAuth = { kind: 'anonymous' } | { kind: 'hmac'; accessKeyId: string; secretAccessKey: string } | { kind: 'oauth'; credentialsFile: string };

export function gcsAuth(opts: S3Options): GcsAuth {
  if (opts.anonymous) return { kind: 'anonymous' };
  const accessKeyId = opts.access_key_id ?? env('GS_ACCESS_KEY_ID');
  const secretAccessKey = opts.secret_access_key ?? env('GS_SECRET_ACCESS_KEY');
  if (accessKeyId !== undefined && secretAccessKey !== undefined) return { kind: 'hmac', accessKeyId, secretAccessKey };
  const credentialsFile = env('GOOGLE_APPLICATION_CREDENTIALS');
  if (credentialsFile !== undefined) return { kind: 'oauth', credentialsFile };
  return { kind: 'anonymous' };
}

/** Adds the access token to every request the client sends (after the unsigned signer, which leaves it alone). */
function sendBearer(client: S3Client, tokens: AccessTokens): void {
  client.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { headers?: Record<string, string> };
      if (request.headers) request.headers.authorization = `Bearer ${await tokens.token()}`;
      return next(args);
    },
    { step: 'build', name: 'gcsBearerToken' },
  );
}

export async function gcsClient(opts: S3Options): Promise<S3Client> {
  const auth = gcsAuth(opts);
  // The token source first: a file that cannot give a token stops the source before a client is made.
  const tokens = auth.kind === 'oauth' ? await googleAccessTokens(auth.credentialsFile) : undefined;
  const client = await s3Client(
    {
      ...opts,
      // Never the AWS chain: AWS keys in the environment are not Google's.
      access_key_id: auth.kind === 'hmac' ? auth.accessKeyId : undefined,
      secret_access_key: auth.kind === 'hmac' ? auth.secretAccessKey : undefined,
      anonymous: auth.kind !== 'hmac',
      force_path_style: opts.force_path_style ?? true,
      profile: undefined,
    },
    // The XML API takes any region name ("auto" by Google's guide) and does not know the SDK's newer checksum headers.
    { region: 'auto', endpoint: defaultEndpoint(), checksums: false },
  );
  if (tokens) sendBearer(client, tokens);
  return client;
}
