// API keys: the configuration holds the SHA-256 of each key, never the key. A key is 32 random bytes (see
// `tileserver-ts key new`), so a fast hash is the right one: there is no dictionary to slow down, and SHA-256 of a
// 256-bit secret cannot be reversed or searched. A slow password hash (scrypt, argon2) would only add
// milliseconds to every request. The table is looked up by the digest (what an attacker does not know, so the
// lookup's timing tells nothing of the key) and the digest found is compared in constant time.
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AuthKeyConfig } from '../config/schema.js';
import { compileMatcher, type Matcher } from './patterns.js';

export interface KeyEntry {
  name: string;
  digest: Buffer;
  sources: Matcher;
  styles: Matcher;
  /** Collections whose features it may write (docs/editing.md). */
  write: Matcher;
  /** Origins a browser may send it from; undefined: any. */
  origins: Matcher | undefined;
  rateClass: string | undefined;
  /** Unix milliseconds from which it is refused. */
  expiresMs: number | undefined;
}

/** SHA-256 of a key, lower-case hex: what `[[auth.keys]] hash` holds. */
export function hashKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** A new random key (`tsk_` and 43 base64url characters: 32 bytes) and its hash. */
export function newKey(): { key: string; hash: string } {
  const key = `tsk_${randomBytes(32).toString('base64url')}`;
  return { key, hash: hashKey(key) };
}

export class KeyTable {
  private readonly byDigest = new Map<string, KeyEntry>();

  constructor(keys: readonly AuthKeyConfig[]) {
    for (const k of keys) {
      const expires = k.expires === undefined ? undefined : Date.parse(k.expires);
      this.byDigest.set(k.hash.toLowerCase(), {
        name: k.name,
        digest: Buffer.from(k.hash, 'hex'),
        sources: compileMatcher(k.sources),
        styles: compileMatcher(k.styles),
        write: compileMatcher(k.write),
        origins: k.origins === undefined ? undefined : compileMatcher(k.origins),
        rateClass: k.rate_class,
        expiresMs: expires,
      });
    }
  }

  get size(): number {
    return this.byDigest.size;
  }

  /** The entry of a key, when it is a configured one and has not expired. */
  lookup(key: string, nowMs: number): KeyEntry | undefined {
    const digest = createHash('sha256').update(key, 'utf8').digest();
    const entry = this.byDigest.get(digest.toString('hex'));
    if (!entry || !timingSafeEqual(digest, entry.digest)) return undefined;
    if (entry.expiresMs !== undefined && nowMs >= entry.expiresMs) return undefined;
    return entry;
  }
}
