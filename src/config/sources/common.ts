// What every kind of source has (its id, names, zoom range and access), a source's `path`, and the storage keys
// of a source read from object storage with the check that they fit the path's scheme.
import * as v from 'valibot';
import { isRemotePath, parseLocation } from '../object-location.js';
import { access, id, nonEmpty, zoom } from '../sections/common.js';

/** Keys of every source, whatever its type. */
export const COMMON_ENTRIES = {
  id,
  name: v.optional(v.string()),
  attribution: v.optional(v.string()),
  description: v.optional(v.string()),
  minzoom: v.optional(zoom),
  maxzoom: v.optional(zoom),
  /** Who may read it (docs/access.md); default: auth.default_access. */
  access: v.optional(access),
};

/** A source's `path`: a file, or a remote URL whose shape is checked here so a typo fails at load, not at first use. */
export const sourcePath = v.pipe(
  nonEmpty,
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed || !isRemotePath(dataset.value)) return;
    const parsed = parseLocation(dataset.value);
    if (typeof parsed === 'string') addIssue({ message: parsed });
  }),
);

/** Keys a source on object storage may set (docs/storage-*.md); which of them apply depends on the path's scheme. */
export const STORAGE_ENTRIES = {
  /** Object storage (s3://, gs://, az://): the store's base URL (S3-compatible stores, an Azure endpoint). */
  endpoint: v.optional(v.pipe(v.string(), v.url('an absolute URL such as https://minio.example.com:9000'))),
  /** s3://: the bucket's region (default: the SDK's chain, else us-east-1). */
  region: v.optional(nonEmpty),
  /** s3://, gs://: bucket in the URL path, not the host name (default: true when an endpoint is set). */
  force_path_style: v.optional(v.boolean()),
  /** s3://: a profile of the shared AWS config and credentials files. */
  profile: v.optional(nonEmpty),
  /** s3:// (an access key) and gs:// (an HMAC key); write secrets as `${VAR}`. */
  access_key_id: v.optional(nonEmpty),
  secret_access_key: v.optional(nonEmpty),
  /** Object storage: read without credentials (a public bucket or container). */
  anonymous: v.optional(v.boolean()),
  /** az://: the storage account, its key, a SAS token or a whole connection string (secrets as `${VAR}`). */
  account: v.optional(nonEmpty),
  account_key: v.optional(nonEmpty),
  sas_token: v.optional(nonEmpty),
  connection_string: v.optional(nonEmpty),
};

export const STORAGE_KEYS = Object.keys(STORAGE_ENTRIES) as (keyof typeof STORAGE_ENTRIES)[];
/** The storage keys as parsed: what a reader of object storage needs besides the path. */
export type StorageKeysConfig = v.InferOutput<v.ObjectSchema<typeof STORAGE_ENTRIES, undefined>>;
type StorageKey = (typeof STORAGE_KEYS)[number];

/** The storage keys each scheme takes; none for local files and http(s) URLs, which carry no credentials. */
const KEYS_OF_SCHEME: Record<string, readonly StorageKey[]> = {
  s3: ['endpoint', 'region', 'force_path_style', 'profile', 'access_key_id', 'secret_access_key', 'anonymous'],
  gs: ['endpoint', 'force_path_style', 'access_key_id', 'secret_access_key', 'anonymous'],
  az: ['endpoint', 'account', 'account_key', 'sas_token', 'connection_string', 'anonymous'],
};

/** Each storage key set on `s` that its path's scheme does not take, with why. */
export function storageKeyProblems(s: { path: string } & Partial<Record<StorageKey, unknown>>, problem: (key: string, message: string) => void): void {
  const scheme = /^([a-z0-9]+):\/\//i.exec(s.path)?.[1]?.toLowerCase();
  const allowed = (scheme && Object.hasOwn(KEYS_OF_SCHEME, scheme) ? KEYS_OF_SCHEME[scheme] : []) as readonly string[];
  const where = allowed.length > 0 ? `an ${scheme}:// path` : 'this path';
  for (const key of STORAGE_KEYS) {
    if (s[key] === undefined || allowed.includes(key)) continue;
    problem(key, `${key} does not apply to ${where} (${allowed.length ? `it takes ${allowed.join(', ')}` : 'only s3://, gs:// and az:// sources take storage keys'})`);
  }
}
