// s3:// objects through the official AWS SDK (`@aws-sdk/client-s3`). Credentials, region and endpoint come from
// the SDK's default chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE and ~/.aws/{config,credentials},
// web identity, container and instance roles, AWS_ENDPOINT_URL/AWS_ENDPOINT_URL_S3), unless the source names
// its own. The SDK's own retries are off: the shared reader (reader.ts) retries every provider the same way.
// The SDK is imported when the first s3:// or gs:// source opens (about 0.4 s of loading), not at every start.
import type { S3Client, S3ClientConfig } from '@aws-sdk/client-s3';
import type { ObjectLocation } from '../../config/object-location.js';
import { contentRangeTotal, failureOfStatus, isNetworkError, oneLine, StoreError, type ObjectStore, type RangeRead } from './store.js';

/** The per-source keys an S3-protocol store takes (TOML; secrets usually as `${VAR}`). */
export interface S3Options {
  endpoint?: string;
  region?: string;
  force_path_style?: boolean;
  profile?: string;
  access_key_id?: string;
  secret_access_key?: string;
  anonymous?: boolean;
}

/** A store that signs nothing: public buckets. */
const unsigned = { sign: async <T>(request: T) => request };

export async function s3Client(opts: S3Options, defaults: { region?: string; endpoint?: string; checksums?: boolean } = {}): Promise<S3Client> {
  // The SDK warns on stderr, once, that its releases from 2027 will need Node 22. The version in package-lock.json
  // runs on Node 20, and a warning in the middle of a one-line start-up error would only confuse; the operator can
  // still turn it back on by setting the variable to anything else.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const endpoint = opts.endpoint ?? defaults.endpoint;
  const config: S3ClientConfig = {
    maxAttempts: 1,
    ...(opts.profile !== undefined ? { profile: opts.profile } : {}),
    ...(endpoint !== undefined ? { endpoint } : {}),
    // S3-compatible stores (MinIO, Ceph, Garage, test servers) rarely resolve bucket sub-domains: with an endpoint
    // given (here or as AWS_ENDPOINT_URL), path-style unless the source says otherwise.
    forcePathStyle: opts.force_path_style ?? (endpoint !== undefined || process.env.AWS_ENDPOINT_URL !== undefined || process.env.AWS_ENDPOINT_URL_S3 !== undefined),
    ...(opts.access_key_id !== undefined && opts.secret_access_key !== undefined
      ? { credentials: { accessKeyId: opts.access_key_id, secretAccessKey: opts.secret_access_key } }
      : {}),
    ...(opts.anonymous ? { signer: unsigned, credentials: { accessKeyId: '', secretAccessKey: '' } } : {}),
    ...(defaults.checksums === false ? { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' } : {}),
  };
  const { S3Client } = await import('@aws-sdk/client-s3');
  const region = opts.region ?? defaults.region;
  if (region !== undefined) return new S3Client({ ...config, region });
  // No region anywhere (env, profile): S3-compatible stores ignore it, and AWS redirects by bucket; us-east-1 is the SDK's own fallback for S3.
  const client = new S3Client(config);
  try {
    await client.config.region();
    return client;
  } catch {
    client.destroy();
    return new S3Client({ ...config, region: 'us-east-1' });
  }
}

/** An SDK error as one of the reader's kinds, with the provider's code, message and status (`pinned`: read with If-Match). */
export function s3Failure(err: unknown, pinned = false): StoreError {
  if (err instanceof StoreError) return err;
  const e = err as { name?: string; message?: string; Code?: string; $metadata?: { httpStatusCode?: number } };
  const status = e.$metadata?.httpStatusCode;
  const code = e.Code ?? e.name ?? 'Error';
  if (code === 'CredentialsProviderError') return new StoreError('denied', `no credentials: ${oneLine(e.message ?? '')}`);
  if (status === undefined) {
    if (isNetworkError(err)) return new StoreError('unavailable', oneLine(e.message ?? String(err)) || code);
    return new StoreError('unavailable', `${code}: ${oneLine(e.message ?? '')}`);
  }
  const message = oneLine(e.message ?? '');
  const reason = `${code}${message && message !== code && message !== 'UnknownError' ? `: ${message}` : ''} (HTTP ${status})`;
  const throttled = status === 429 || /SlowDown|Throttl|TooManyRequests/.test(code);
  return new StoreError(throttled ? 'unavailable' : failureOfStatus(status, pinned), reason, throttled);
}

export class S3Store implements ObjectStore {
  private constructor(
    private readonly client: S3Client,
    private readonly loc: ObjectLocation,
    private readonly GetObjectCommand: typeof import('@aws-sdk/client-s3').GetObjectCommand,
  ) {}

  static async create(client: S3Client, loc: ObjectLocation): Promise<S3Store> {
    const { GetObjectCommand } = await import('@aws-sdk/client-s3');
    return new S3Store(client, loc, GetObjectCommand);
  }

  async read(offset: number, length: number, signal: AbortSignal, ifMatch: string | undefined): Promise<RangeRead> {
    const { GetObjectCommand } = this;
    try {
      const out = await this.client.send(
        new GetObjectCommand({ Bucket: this.loc.bucket, Key: this.loc.key, Range: `bytes=${offset}-${offset + length - 1}`, ...(ifMatch ? { IfMatch: ifMatch } : {}) }),
        { abortSignal: signal },
      );
      const data = out.Body ? await out.Body.transformToByteArray() : new Uint8Array(0);
      return { data, etag: out.ETag, size: contentRangeTotal(out.ContentRange) };
    } catch (err) {
      throw s3Failure(err, ifMatch !== undefined);
    }
  }

  close(): void {
    this.client.destroy();
  }
}
