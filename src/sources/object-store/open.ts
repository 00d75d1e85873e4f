// Picks the provider module for a remote source's path and builds its shared reader.
import type { StoredSourceConfig, StorageConfig } from '../../config/schema.js';
import { AzureStore, azureBlob } from './azure.js';
import { gcsClient } from './gcs.js';
import { HttpStore } from './http.js';
import { parseLocation, type ObjectLocation } from '../../config/object-location.js';
import { StorageChannel, type ReadSettings } from './reader.js';
import { s3Client, S3Store } from './s3.js';
import { StoreError, type ObjectStore } from './store.js';

export function readSettings(storage: StorageConfig): ReadSettings {
  return { timeoutMs: storage.read_timeout_ms, retries: storage.read_retries, maxConcurrent: storage.max_concurrent_reads };
}

async function storeFor(loc: ObjectLocation, cfg: StoredSourceConfig): Promise<ObjectStore> {
  switch (loc.provider) {
    case 's3':
      return S3Store.create(await s3Client(cfg), loc);
    case 'gs':
      return S3Store.create(await gcsClient(cfg), loc);
    case 'az': {
      const blob = await azureBlob(loc, cfg);
      if (typeof blob === 'string') throw new StoreError('denied', blob);
      return new AzureStore(blob);
    }
    case 'http':
      return new HttpStore(loc);
  }
}

/** The reader of a remote source; throws StoreError when its settings cannot make a client. */
export async function openChannel(cfg: StoredSourceConfig, storage: StorageConfig): Promise<StorageChannel> {
  const loc = parseLocation(cfg.path);
  if (typeof loc === 'string') throw new StoreError('invalid', loc);
  return new StorageChannel(cfg.id, loc, await storeFor(loc, cfg), readSettings(storage));
}
