// The key that signs access tokens (ES256), kept as a private JWK in a file under the state directory
// (`[cache] dir`), readable by the owner only. Every process of the service and every restart uses the same key,
// so a token issued by one worker is good at another and outlives a restart until it expires.
// The first process to need it creates it; others racing it read the winner's (the file appears whole or not at
// all: written aside, then hard-linked into place, which fails if it is there already).
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type * as Jose from 'jose';

/** The jose module, passed in by whoever opened the OAuth server (imported only when OAuth is on). */
export type JoseModule = typeof Jose;

export const SIGNING_ALG = 'ES256';
export const KEY_FILE = 'mcp-oauth-signing-key.json';

export interface SigningKey {
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  /** Key id (`kid` of every token). */
  kid: string;
}

async function fromJwk(jose: JoseModule, jwk: Jose.JWK): Promise<SigningKey> {
  const { d: _d, ...pub } = jwk;
  const privateKey = (await jose.importJWK(jwk, SIGNING_ALG)) as CryptoKey;
  const publicKey = (await jose.importJWK(pub, SIGNING_ALG)) as CryptoKey;
  return { privateKey, publicKey, kid: String(jwk.kid) };
}

export async function loadSigningKey(jose: JoseModule, stateDir: string): Promise<SigningKey> {
  const file = path.join(stateDir, KEY_FILE);
  try {
    return await fromJwk(jose, JSON.parse(readFileSync(file, 'utf8')) as Jose.JWK);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new Error(`mcp.oauth: cannot read the signing key ${file}: ${(err as Error).message}`);
  }
  mkdirSync(stateDir, { recursive: true });
  const { privateKey } = await jose.generateKeyPair(SIGNING_ALG, { extractable: true });
  const jwk = { ...(await jose.exportJWK(privateKey)), kid: randomBytes(8).toString('hex'), alg: SIGNING_ALG };
  const aside = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(aside, JSON.stringify(jwk), { mode: 0o600 });
  try {
    linkSync(aside, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    unlinkSync(aside);
  }
  return fromJwk(jose, JSON.parse(readFileSync(file, 'utf8')) as Jose.JWK);
}
