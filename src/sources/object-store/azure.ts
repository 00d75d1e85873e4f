// az://container/blob through the official Azure SDK (`@azure/storage-blob`). Credentials the way the Azure CLI
// and GDAL take them: a connection string (AZURE_STORAGE_CONNECTION_STRING), else an account name
// (AZURE_STORAGE_ACCOUNT) with its key (AZURE_STORAGE_KEY, or GDAL's AZURE_STORAGE_ACCESS_KEY) or a SAS token
// (AZURE_STORAGE_SAS_TOKEN), else anonymous (a public container); a source's own keys come first.
import { Readable } from 'node:stream';
// The SDK is imported when the first az:// source opens (about 0.5 s of loading), not at every start.
import type { BlobClient, StoragePipelineOptions } from '@azure/storage-blob';
import type { ObjectLocation } from '../../config/object-location.js';
import { contentRangeTotal, failureOfStatus, isNetworkError, oneLine, StoreError, type ObjectStore, type RangeRead } from './store.js';

export interface AzureOptions {
  endpoint?: string;
  account?: string;
  account_key?: string;
  sas_token?: string;
  connection_string?: string;
  anonymous?: boolean;
}

/** The SDK's own retries are off: reader.ts retries every provider the same way. */
const PIPELINE: StoragePipelineOptions = { retryOptions: { maxTries: 1 } };

const env = (name: string) => (process.env[name] === '' ? undefined : process.env[name]);

/** The blob's client, or a sentence saying which setting is missing. */
export async function azureBlob(loc: ObjectLocation, opts: AzureOptions): Promise<BlobClient | string> {
  const { AnonymousCredential, BlobClient, BlobServiceClient, StorageSharedKeyCredential } = await import('@azure/storage-blob');
  const connection = opts.anonymous ? undefined : (opts.connection_string ?? (opts.account || opts.endpoint ? undefined : env('AZURE_STORAGE_CONNECTION_STRING')));
  if (connection !== undefined) {
    try {
      return BlobServiceClient.fromConnectionString(connection, PIPELINE).getContainerClient(loc.bucket).getBlobClient(loc.key);
    } catch (err) {
      return `the Azure connection string is not valid: ${oneLine((err as Error).message)}`;
    }
  }
  const account = opts.account ?? env('AZURE_STORAGE_ACCOUNT');
  if (account === undefined && opts.endpoint === undefined) return 'no Azure account: set AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT, or the source\'s endpoint';
  const base = (opts.endpoint ?? `https://${account}.blob.core.windows.net`).replace(/\/+$/, '');
  const url = `${base}/${loc.bucket}/${loc.key.split('/').map(encodeURIComponent).join('/')}`;
  const key = opts.anonymous ? undefined : (opts.account_key ?? env('AZURE_STORAGE_KEY') ?? env('AZURE_STORAGE_ACCESS_KEY'));
  if (key !== undefined) {
    if (account === undefined) return 'an Azure account key needs the account name: set the source\'s account or AZURE_STORAGE_ACCOUNT';
    return new BlobClient(url, new StorageSharedKeyCredential(account, key), PIPELINE);
  }
  const sas = opts.anonymous ? undefined : (opts.sas_token ?? env('AZURE_STORAGE_SAS_TOKEN'));
  if (sas !== undefined) return new BlobClient(`${url}?${sas.replace(/^\?/, '')}`, new AnonymousCredential(), PIPELINE);
  return new BlobClient(url, new AnonymousCredential(), PIPELINE);
}

function azureFailure(err: unknown): StoreError {
  if (err instanceof StoreError) return err;
  const e = err as { name?: string; message?: string; code?: string; statusCode?: number; details?: { errorCode?: string } };
  const status = e.statusCode;
  const code = e.details?.errorCode ?? e.code ?? e.name ?? 'Error';
  if (status === undefined || status === 0) return new StoreError('unavailable', oneLine(e.message ?? String(err)) || code);
  const message = oneLine(e.message ?? '');
  // The SDK's message for a HEAD-less error is often empty or the code again.
  const reason = `${code}${message && message !== code ? `: ${message}` : ''} (HTTP ${status})`;
  const throttled = status === 429 || status === 503 && /ServerBusy/.test(code);
  return new StoreError(throttled ? 'unavailable' : failureOfStatus(status), reason, throttled);
}

async function collect(stream: NodeJS.ReadableStream | undefined): Promise<Uint8Array> {
  if (!stream) return new Uint8Array(0);
  const parts: Buffer[] = [];
  for await (const chunk of Readable.from(stream as AsyncIterable<Buffer>)) parts.push(chunk as Buffer);
  const all = Buffer.concat(parts);
  // A plain Uint8Array over the same bytes, as the other providers return: a Buffer's slice() is a view, not a copy,
  // and readers that take `.slice().buffer` for an ArrayBuffer of their range got the whole backing store instead.
  return new Uint8Array(all.buffer, all.byteOffset, all.byteLength);
}

export class AzureStore implements ObjectStore {
  constructor(private readonly blob: BlobClient) {}

  async read(offset: number, length: number, signal: AbortSignal, ifMatch: string | undefined): Promise<RangeRead> {
    try {
      const res = await this.blob.download(offset, length, { abortSignal: signal, maxRetryRequests: 0, ...(ifMatch ? { conditions: { ifMatch } } : {}) });
      return { data: await collect(res.readableStreamBody), etag: res.etag, size: contentRangeTotal(res.contentRange) };
    } catch (err) {
      if (isNetworkError(err) && (err as { statusCode?: number }).statusCode === undefined) throw new StoreError('unavailable', oneLine((err as Error).message));
      throw azureFailure(err);
    }
  }

  close(): void {}
}
