// OAuth access tokens for gs:// reads from a service-account file (GOOGLE_APPLICATION_CREDENTIALS), made by
// Google's official auth library (`google-auth-library`): it signs the JWT assertion with the file's key, trades
// it for an access token at the token endpoint and refreshes the token before it expires (its own cache; asking
// for a token costs nothing while the cached one is good). gcs.ts sends the token as `Authorization: Bearer`.
// The library is imported when the first such source opens, not at every start.
import { readFileSync } from 'node:fs';
import type { AuthClient } from 'google-auth-library';
import { isNetworkError, oneLine, StoreError } from './store.js';

/** Read-only access to Cloud Storage objects, the narrowest scope that covers a ranged GET. */
export const GCS_READ_SCOPE = 'https://www.googleapis.com/auth/cloud-platform.read-only';

/** Where the library posts a service account's assertion, whatever the file says (its JWT client has it built in). */
const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';

/** Hands out a valid access token for every request; throws StoreError when none can be had. */
export interface AccessTokens {
  token(): Promise<string>;
}

/**
 * The file's `token_uri`, when it is a URL other than Google's default. Google's file always carries one; the
 * Python library and gcloud post there, the Node library does not, so it is passed on here (a private endpoint).
 * A file that cannot be read or parsed is left to the library, whose message says what is wrong.
 */
function tokenUri(file: string): URL | undefined {
  try {
    const uri = (JSON.parse(readFileSync(file, 'utf8')) as { token_uri?: unknown }).token_uri;
    if (typeof uri !== 'string' || uri === GOOGLE_TOKEN_URL) return undefined;
    return new URL(uri);
  } catch {
    return undefined;
  }
}

/** A failure of the token endpoint (or of the file) as the reader's kinds: refused is 'denied', no answer is 'unavailable'. */
function tokenFailure(err: unknown): StoreError {
  const e = err as { message?: string; status?: number; response?: { status?: number } };
  const status = e.response?.status ?? e.status;
  const message = oneLine(e.message ?? String(err));
  if (status === undefined) {
    // No HTTP answer: the endpoint is unreachable (retried), or the file is unusable (refused).
    return new StoreError(isNetworkError(err) ? 'unavailable' : 'denied', `Google OAuth token from GOOGLE_APPLICATION_CREDENTIALS: ${message}`);
  }
  const kind = status >= 400 && status < 500 && status !== 429 ? 'denied' : 'unavailable';
  return new StoreError(kind, `Google OAuth token refused (HTTP ${status}): ${message}`, status === 429);
}

/** Tokens for the service-account (or other credential) file at `file`, with the read-only scope. */
export async function googleAccessTokens(file: string): Promise<AccessTokens> {
  const { GoogleAuth } = await import('google-auth-library');
  const auth = new GoogleAuth({ keyFilename: file, scopes: [GCS_READ_SCOPE] });
  let client: AuthClient;
  try {
    client = await auth.getClient();
  } catch (err) {
    throw tokenFailure(err);
  }
  const uri = tokenUri(file);
  if (uri) {
    // The client's own transport carries the token request: redirect the built-in URL to the file's.
    client.transporter.interceptors.request.add({
      resolved: async (opts) => {
        if (String(opts.url) === GOOGLE_TOKEN_URL) opts.url = uri;
        return opts;
      },
    });
  }
  return {
    async token() {
      try {
        const { token } = await client.getAccessToken();
        if (!token) throw new StoreError('denied', 'Google OAuth: the token endpoint answered without an access token');
        return token;
      } catch (err) {
        throw err instanceof StoreError ? err : tokenFailure(err);
      }
    },
  };
}
