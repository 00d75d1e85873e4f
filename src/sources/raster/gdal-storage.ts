// GDAL's configuration for rasters on object storage (COG/VRT sources and out-of-database raster paths read
// through /vsis3/, /vsigs/, /vsiaz/). GDAL reads most of the standard variables itself (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_PROFILE and ~/.aws, GS_ACCESS_KEY_ID, AZURE_STORAGE_CONNECTION_STRING,
// ...); this module adds what it names differently (the AWS SDK's AWS_ENDPOINT_URL, Google's
// STORAGE_EMULATOR_HOST, the Azure CLI's AZURE_STORAGE_KEY) and a COG/VRT source's own storage keys. GDAL's
// options are process-wide, so two raster sources on the same provider must agree on them: a conflict is a
// start-up error, not a coin toss per request.
import { parseLocation } from '../../config/object-location.js';
import type { Config, RasterSourceConfig } from '../../config/schema.js';
import type { GdalOptions } from '../../raster/warp-tile.js';
import { SourceOpenError } from '../source.js';

export type { GdalOptions };

/** GDAL's S3 endpoint options for an endpoint URL (`http://host:port`): host and port, https or not, path-style. */
function s3Endpoint(url: string, pathStyle: boolean | undefined): GdalOptions {
  const u = new URL(url);
  const hostPath = `${u.host}${u.pathname.replace(/\/+$/, '')}`;
  return { AWS_S3_ENDPOINT: hostPath, AWS_HTTPS: u.protocol === 'https:' ? 'YES' : 'NO', AWS_VIRTUAL_HOSTING: pathStyle === false ? 'TRUE' : 'FALSE' };
}

/** GDAL's Cloud Storage endpoint option for an endpoint URL: GDAL appends the bucket and key to it as they are. */
function gsEndpoint(url: string): string {
  return `${url.replace(/\/+$/, '')}/`;
}

/** Options from the environment that GDAL does not read under these names, and `[storage]` in GDAL's terms. */
function fromEnvironment(config: Config, env: NodeJS.ProcessEnv): GdalOptions {
  const out: GdalOptions = {};
  // The same bounds as PMTiles reads: GDAL retries 429/5xx itself and times out a request (in whole seconds).
  if (!env.GDAL_HTTP_MAX_RETRY) out.GDAL_HTTP_MAX_RETRY = String(config.storage.read_retries);
  if (!env.GDAL_HTTP_RETRY_DELAY) out.GDAL_HTTP_RETRY_DELAY = '0.1';
  if (!env.GDAL_HTTP_TIMEOUT) out.GDAL_HTTP_TIMEOUT = String(Math.max(1, Math.ceil(config.storage.read_timeout_ms / 1000)));
  const endpoint = env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  if (endpoint && !env.AWS_S3_ENDPOINT) Object.assign(out, s3Endpoint(endpoint, undefined));
  // What gs:// PMTiles sources read (object-store/gcs.ts), rasters read too: without this GDAL would go to Google.
  const emulator = env.STORAGE_EMULATOR_HOST;
  if (emulator && !env.CPL_GS_ENDPOINT) out.CPL_GS_ENDPOINT = gsEndpoint(/^https?:\/\//i.test(emulator) ? emulator : `http://${emulator}`);
  if (env.AZURE_STORAGE_KEY && !env.AZURE_STORAGE_ACCESS_KEY) out.AZURE_STORAGE_ACCESS_KEY = env.AZURE_STORAGE_KEY;
  // Opening a file must not list its "directory" (a bucket prefix): one request fewer, and no s3:ListBucket needed.
  if (!env.GDAL_DISABLE_READDIR_ON_OPEN) out.GDAL_DISABLE_READDIR_ON_OPEN = 'EMPTY_DIR';
  return out;
}

/** A connection string naming the blob endpoint and whichever of account, key and SAS the source gives. */
function azureConnectionString(endpoint: string, s: RasterSourceConfig): string {
  const parts = [`BlobEndpoint=${endpoint.replace(/\/+$/, '')}`];
  if (s.account) parts.push(`AccountName=${s.account}`);
  if (s.account_key) parts.push(`AccountKey=${s.account_key}`);
  if (s.sas_token) parts.push(`SharedAccessSignature=${s.sas_token.replace(/^\?/, '')}`);
  return `${parts.join(';')};`;
}

/** The GDAL options a raster source's own storage keys stand for. */
function fromSource(s: RasterSourceConfig): GdalOptions {
  const loc = parseLocation(s.path);
  if (typeof loc === 'string') return {};
  const out: GdalOptions = {};
  const set = (key: string, value: string | undefined) => value !== undefined && (out[key] = value);
  if (loc.provider === 's3') {
    if (s.endpoint) Object.assign(out, s3Endpoint(s.endpoint, s.force_path_style));
    set('AWS_REGION', s.region);
    set('AWS_PROFILE', s.profile);
    set('AWS_ACCESS_KEY_ID', s.access_key_id);
    set('AWS_SECRET_ACCESS_KEY', s.secret_access_key);
    if (s.anonymous) out.AWS_NO_SIGN_REQUEST = 'YES';
  } else if (loc.provider === 'gs') {
    // GDAL's own (test) knob for a Cloud Storage endpoint other than storage.googleapis.com.
    if (s.endpoint) out.CPL_GS_ENDPOINT = gsEndpoint(s.endpoint);
    set('GS_ACCESS_KEY_ID', s.access_key_id);
    set('GS_SECRET_ACCESS_KEY', s.secret_access_key);
    if (s.anonymous) out.GS_NO_SIGN_REQUEST = 'YES';
  } else if (loc.provider === 'az') {
    // GDAL's /vsiaz/ has no endpoint option: a connection string with a BlobEndpoint is how it is given one, so a
    // source's endpoint travels in one built from its own keys (a connection string of the source's wins).
    set('AZURE_STORAGE_CONNECTION_STRING', s.connection_string ?? (s.endpoint ? azureConnectionString(s.endpoint, s) : undefined));
    set('AZURE_STORAGE_ACCOUNT', s.account);
    set('AZURE_STORAGE_ACCESS_KEY', s.account_key);
    set('AZURE_STORAGE_SAS_TOKEN', s.sas_token);
    if (s.anonymous) out.AZURE_NO_SIGN_REQUEST = 'YES';
  }
  return out;
}

/** The options every GDAL call of this configuration runs with; throws when two raster sources disagree. */
export function gdalStorageOptions(config: Config, env: NodeJS.ProcessEnv = process.env): GdalOptions {
  const out = fromEnvironment(config, env);
  const setBy: Record<string, string> = {};
  for (const s of config.sources) {
    if (s.type !== 'cog' && s.type !== 'vrt') continue;
    for (const [key, value] of Object.entries(fromSource(s))) {
      if (setBy[key] !== undefined && out[key] !== value) {
        throw new SourceOpenError(s.id, `its storage settings set GDAL's ${key} differently from source "${setBy[key]}"; GDAL's options are process-wide, so raster sources on one provider must share endpoint, region and credentials`);
      }
      out[key] = value;
      setBy[key] = s.id;
    }
  }
  return out;
}
