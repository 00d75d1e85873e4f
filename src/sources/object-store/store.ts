// What every provider module (s3.ts, gcs.ts, azure.ts, http.ts) offers the shared range reader, and how it
// reports failure. Providers only translate: one ranged GET through their SDK, and their errors into the four
// kinds below. Retries, timeouts, concurrency, ETag pinning and metrics live once, in reader.ts.

/** One ranged read: the bytes and the object's ETag as the store reported it (undefined when it has none). */
export interface RangeRead {
  /** A plain Uint8Array, never a Buffer (whose slice() does not copy; the readers above rely on it copying). */
  data: Uint8Array;
  etag: string | undefined;
  /** The whole object's size when the store said it (Content-Range): readers of formats with a footer need it. */
  size?: number;
}

/** The total of a Content-Range header (`bytes 0-99/1234`), or undefined when it is absent or `*`. */
export function contentRangeTotal(header: string | null | undefined): number | undefined {
  const m = /\/(\d+)\s*$/.exec(header ?? '');
  return m ? Number(m[1]) : undefined;
}

export interface ObjectStore {
  /**
   * Reads `length` bytes from `offset`. With `ifMatch`, the store is asked to answer only while the object
   * still has that ETag (S3 If-Match, Azure ifMatch, HTTP If-Match) and a changed object fails as 'changed'.
   */
  read(offset: number, length: number, signal: AbortSignal, ifMatch: string | undefined): Promise<RangeRead>;
  close(): void;
}

/**
 * - missing: no such object/bucket (404): start-up stops; a later read answers 503 until it is back.
 * - denied: credentials refused or not allowed (401/403): start-up stops.
 * - changed: the object's ETag is no longer the one the archive was opened with (412 or a different ETag).
 * - unavailable: the store did not answer usefully (network, 5xx, throttling, timeout): retried, then 503.
 * - invalid: the store answers, but not as range reads need (an http server that ignores Range): start-up stops.
 */
export type StoreFailure = 'missing' | 'denied' | 'changed' | 'unavailable' | 'invalid';

export class StoreError extends Error {
  constructor(
    readonly kind: StoreFailure,
    /** The provider's reason, one line (e.g. "SignatureDoesNotMatch: The request signature ... (HTTP 403)"). */
    readonly reason: string,
    /** Throttling (429, SlowDown) is retried like a 5xx but says so. */
    readonly throttled = false,
    /** The read ran out of time (`read_timeout_ms`): not retried, a slow store would only get slower answers. */
    readonly timedOut = false,
  ) {
    super(reason);
    this.name = 'StoreError';
  }
}

/**
 * The kind of an HTTP status from a store. `pinned`: the read asked for an ETag (If-Match). Its range comes from
 * the header of that ETag's object, so "range not satisfiable" means the object is no longer that one (it
 * shrank): a store that ignores If-Match answers 416 where one that honours it answers 412.
 */
export function failureOfStatus(status: number, pinned = false): StoreFailure {
  if (status === 404) return 'missing';
  if (status === 401 || status === 403) return 'denied';
  if (status === 412 || (status === 416 && pinned)) return 'changed';
  return 'unavailable';
}

/** Node and undici network error codes: the store is not reachable now. */
export function isNetworkError(err: unknown): boolean {
  let e = err as { code?: string; cause?: unknown; name?: string } | undefined;
  for (let depth = 0; e && depth < 4; depth++) {
    if (typeof e.code === 'string' && /^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EHOSTUNREACH|ENETUNREACH|ETIMEDOUT|EPIPE|EAI_AGAIN|UND_ERR_\w+)$/.test(e.code)) return true;
    if (e.name === 'TimeoutError' || e.name === 'AbortError') return true;
    e = e.cause as typeof e;
  }
  return false;
}

/** One line: the first line of a message, without trailing spaces. */
export function oneLine(text: string): string {
  return text.split('\n')[0].trim();
}
