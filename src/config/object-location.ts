// Where a remote archive lives: `s3://bucket/key`, `gs://bucket/key`, `az://container/blob` or an http(s) URL.
// Parsed once from a source's `path` (config validation, the CLI, the PMTiles source, the raster threads) so
// every place agrees on what counts as remote and on the bucket/key split.

export type Provider = 's3' | 'gs' | 'az' | 'http';

export interface ObjectLocation {
  provider: Provider;
  /** The path as configured, for messages. */
  url: string;
  /** Bucket (S3, GCS) or container (Azure); empty for http(s). */
  bucket: string;
  /** Object key or blob name, without a leading "/"; for http(s) the whole URL. */
  key: string;
}

const SCHEMES: Record<string, Provider> = { 's3:': 's3', 'gs:': 'gs', 'az:': 'az', 'http:': 'http', 'https:': 'http' };

/** True when `path` names a remote object (any scheme above), not a local file. */
export function isRemotePath(path: string): boolean {
  return /^(s3|gs|az|https?):\/\//i.test(path);
}

/** True for the object-storage schemes (not http(s)). */
export function isBucketPath(path: string): boolean {
  return /^(s3|gs|az):\/\//i.test(path);
}

/**
 * Parses a remote path; returns a sentence saying what is wrong when it is not one. Bucket and key are taken
 * verbatim (S3 keys may hold any character, including "%" and "?"), so no URL decoding happens here.
 */
export function parseLocation(path: string): ObjectLocation | string {
  const m = /^([A-Za-z0-9]+:)\/\/(.*)$/s.exec(path);
  const provider = m ? SCHEMES[m[1].toLowerCase()] : undefined;
  if (!m || !provider) return `${JSON.stringify(path)} is not an s3://, gs://, az:// or http(s):// URL`;
  if (provider === 'http') {
    try {
      new URL(path);
    } catch {
      return `${JSON.stringify(path)} is not a valid URL`;
    }
    return { provider, url: path, bucket: '', key: path };
  }
  const rest = m[2];
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  const key = slash < 0 ? '' : rest.slice(slash + 1);
  const what = provider === 'az' ? 'container' : 'bucket';
  if (!/^[a-z0-9][a-z0-9._-]{1,253}[a-z0-9]$/.test(bucket)) return `${JSON.stringify(path)}: "${bucket}" is not a valid ${what} name (3-255 lower-case letters, digits, ".", "-", "_")`;
  if (key === '' || key.endsWith('/')) return `${JSON.stringify(path)} names no object: expected ${m[1]}//${what}/key`;
  return { provider, url: path, bucket, key };
}

/** GDAL's virtual file system path for a remote raster (`/vsis3/`, `/vsigs/`, `/vsiaz/`, `/vsicurl/`); local paths unchanged. */
export function gdalPath(path: string): string {
  if (!isRemotePath(path)) return path;
  const loc = parseLocation(path);
  if (typeof loc === 'string') return path;
  if (loc.provider === 'http') return `/vsicurl/${loc.url}`;
  const prefix = { s3: '/vsis3/', gs: '/vsigs/', az: '/vsiaz/' }[loc.provider];
  return `${prefix}${loc.bucket}/${loc.key}`;
}
