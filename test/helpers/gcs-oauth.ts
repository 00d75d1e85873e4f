// Stand-ins for Google's side of OAuth to Cloud Storage, which cannot run here: a token endpoint and, in front of
// s3rver, a proxy that takes only the access tokens that endpoint issued.
// - Service-account files like the ones the Cloud console hands out (`type: service_account`, an RSA key made
//   here), whose `token_uri` names the local token endpoint.
// - The token endpoint checks the JWT assertion as Google's does: RS256 signature against the account's public
//   key, issuer a known account, audience Google's token URL, the read-only scope asked for, not expired; it
//   answers an access token or Google's `invalid_grant` (400).
// - The proxy answers 401 to a request without a live token it issued, and otherwise forwards the request,
//   its Authorization header removed, to a public bucket of s3rver (which serves unsigned reads only).
import { createPublicKey, generateKeyPairSync, randomBytes, verify, type KeyObject } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { freePort } from './server.js';

export const GOOGLE_TOKEN_AUDIENCE = 'https://oauth2.googleapis.com/token';
export const READ_ONLY_SCOPE = 'https://www.googleapis.com/auth/cloud-platform.read-only';

export interface ServiceAccount {
  email: string;
  /** The key file, as GOOGLE_APPLICATION_CREDENTIALS names it. */
  file: string;
  publicKey: KeyObject;
}

/** Writes a service-account key file for `email` with a fresh RSA key into `dir`. */
export function serviceAccountFile(dir: string, email: string, tokenUri: string): ServiceAccount {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const file = path.join(dir, `${email.split('@')[0]}.json`);
  const json = {
    type: 'service_account',
    project_id: 'tsts-project',
    private_key_id: randomBytes(20).toString('hex'),
    private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    client_email: email,
    client_id: String(100000000000000000000n + BigInt(randomBytes(4).readUInt32BE())),
    auth_uri: 'https://accounts.google.com/o/oauth2/auth',
    token_uri: tokenUri,
  };
  writeFileSync(file, JSON.stringify(json, null, 2));
  return { email, file, publicKey: createPublicKey(privateKey) };
}

interface Issued {
  email: string;
  /** When the storage side stops taking it (ms since the epoch). */
  expiresAt: number;
}

export interface GoogleStandIn {
  /** The token endpoint's URL, for `token_uri`. */
  tokenUri: string;
  /** The proxy's URL, the gs:// source's `endpoint`. */
  endpoint: string;
  /** Accounts whose assertions the endpoint accepts; `granted`: whose tokens the proxy lets through. */
  addAccount(account: ServiceAccount, granted: boolean): void;
  /** Seconds of life given to the next tokens (`expires_in`) and enforced by the proxy. */
  setLifetime(seconds: number): void;
  /** Tokens issued from now on are already expired at the proxy, while `expires_in` still says an hour. */
  issueStale(stale: boolean): void;
  /** Tokens issued so far (each a successful exchange of an assertion). */
  readonly issuedCount: number;
  /** Requests the proxy let through to s3rver, and those it refused. */
  readonly forwarded: number;
  readonly refused: number;
  close(): Promise<void>;
}

function base64urlJson(part: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as Record<string, unknown>;
}

async function body(req: http.IncomingMessage): Promise<string> {
  let s = '';
  for await (const chunk of req) s += chunk;
  return s;
}

function listen(server: http.Server, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
}

/** Starts the token endpoint and the proxy in front of s3rver (its port). */
export async function startGoogleStandIn(s3rverPort: number): Promise<GoogleStandIn> {
  const keys = new Map<string, { publicKey: KeyObject; granted: boolean }>();
  const tokens = new Map<string, Issued>();
  let lifetime = 3600;
  let stale = false;
  let issuedCount = 0;
  let forwarded = 0;
  let refused = 0;

  const invalidGrant = (res: http.ServerResponse, description: string) => {
    res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'invalid_grant', error_description: description }));
  };
  const tokenServer = http.createServer(async (req, res) => {
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const form = new URLSearchParams(await body(req));
    if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return invalidGrant(res, 'Invalid grant_type.');
    const parts = (form.get('assertion') ?? '').split('.');
    if (parts.length !== 3) return invalidGrant(res, 'Invalid JWT.');
    let header: Record<string, unknown>;
    let claims: Record<string, unknown>;
    try {
      header = base64urlJson(parts[0]);
      claims = base64urlJson(parts[1]);
    } catch {
      return invalidGrant(res, 'Invalid JWT.');
    }
    const account = keys.get(String(claims.iss));
    if (header.alg !== 'RS256' || !account) return invalidGrant(res, 'Invalid JWT Signature.');
    const signed = verify('RSA-SHA256', Buffer.from(`${parts[0]}.${parts[1]}`), account.publicKey, Buffer.from(parts[2], 'base64url'));
    if (!signed) return invalidGrant(res, 'Invalid JWT Signature.');
    const now = Date.now() / 1000;
    if (claims.aud !== GOOGLE_TOKEN_AUDIENCE) return invalidGrant(res, `Invalid JWT: audience ${String(claims.aud)}.`);
    if (typeof claims.exp !== 'number' || claims.exp < now || typeof claims.iat !== 'number' || claims.iat > now + 60) return invalidGrant(res, 'Invalid JWT: Token must be a short-lived token and in a reasonable timeframe.');
    if (!String(claims.scope ?? '').split(' ').includes(READ_ONLY_SCOPE)) return invalidGrant(res, 'Invalid JWT: the read-only scope was not asked for.');
    const token = `ya29.${randomBytes(24).toString('base64url')}`;
    tokens.set(token, { email: String(claims.iss), expiresAt: stale ? Date.now() - 1000 : Date.now() + lifetime * 1000 });
    issuedCount++;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ access_token: token, expires_in: stale ? 3600 : lifetime, token_type: 'Bearer' }));
  });

  const xmlError = (res: http.ServerResponse, status: number, code: string, message: string) => {
    refused++;
    res.writeHead(status, { 'content-type': 'application/xml' }).end(`<?xml version='1.0' encoding='UTF-8'?><Error><Code>${code}</Code><Message>${message}</Message></Error>`);
  };
  const proxy = http.createServer((req, res) => {
    const m = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '');
    const issued = m ? tokens.get(m[1]) : undefined;
    if (!issued) return xmlError(res, 401, 'AuthenticationRequired', 'Invalid Credentials');
    if (issued.expiresAt <= Date.now()) return xmlError(res, 401, 'AuthenticationRequired', 'Invalid Credentials: the access token expired');
    if (!keys.get(issued.email)?.granted) return xmlError(res, 403, 'AccessDenied', `${issued.email} does not have storage.objects.get access to the Google Cloud Storage object.`);
    forwarded++;
    const headers = { ...req.headers };
    delete headers.authorization;
    const upstream = http.request({ host: '127.0.0.1', port: s3rverPort, method: req.method, path: req.url, headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });

  const tokenPort = await freePort();
  const proxyPort = await freePort();
  await listen(tokenServer, tokenPort);
  await listen(proxy, proxyPort);
  return {
    tokenUri: `http://127.0.0.1:${tokenPort}/token`,
    endpoint: `http://127.0.0.1:${proxyPort}`,
    addAccount: (account, granted) => void keys.set(account.email, { publicKey: account.publicKey, granted }),
    setLifetime: (seconds) => void (lifetime = seconds),
    issueStale: (on) => void (stale = on),
    get issuedCount() {
      return issuedCount;
    },
    get forwarded() {
      return forwarded;
    },
    get refused() {
      return refused;
    },
    async close() {
      for (const s of [tokenServer, proxy]) {
        s.closeAllConnections();
        await new Promise<void>((resolve) => s.close(() => resolve()));
      }
    },
  };
}
