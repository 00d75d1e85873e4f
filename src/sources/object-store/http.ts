// http(s):// archives read with ranged GETs through Node's fetch. This replaces the pmtiles package's FetchSource
// so that plain URLs get what the bucket providers get from reader.ts: retries, a timeout per read, a bound on
// concurrent reads, metrics, and the ETag pinning that re-opens a replaced archive instead of mixing two.
import type { ObjectLocation } from '../../config/object-location.js';
import { contentRangeTotal, failureOfStatus, isNetworkError, oneLine, StoreError, type ObjectStore, type RangeRead } from './store.js';

export class HttpStore implements ObjectStore {
  constructor(private readonly loc: ObjectLocation) {}

  async read(offset: number, length: number, signal: AbortSignal, ifMatch: string | undefined): Promise<RangeRead> {
    const headers: Record<string, string> = { range: `bytes=${offset}-${offset + length - 1}` };
    if (ifMatch) headers['if-match'] = ifMatch;
    let res: Response;
    try {
      res = await fetch(this.loc.url, { headers, signal });
    } catch (err) {
      throw new StoreError('unavailable', isNetworkError(err) ? networkReason(err) : oneLine(String((err as Error).message ?? err)));
    }
    // Weak ETags say "equivalent", not "the same bytes": no use for pinning an archive.
    const raw = res.headers.get('etag');
    const etag = raw && !raw.startsWith('W/') ? raw : undefined;
    if (res.status === 416 && offset === 0) {
      // Shorter than the first read (a tiny archive): read what there is.
      const total = Number(/^bytes \*\/(\d+)$/.exec(res.headers.get('content-range') ?? '')?.[1]);
      await res.body?.cancel();
      if (Number.isFinite(total) && total > 0) return this.read(0, total, signal, ifMatch);
    }
    if (res.status === 200) {
      const size = Number(res.headers.get('content-length'));
      if (!(size <= length)) {
        await res.body?.cancel();
        throw new StoreError('invalid', 'the server ignored the Range header (answered 200 with the whole file): it must support HTTP range requests (byte serving)');
      }
    } else if (res.status !== 206) {
      await res.body?.cancel();
      const status = res.status;
      const throttled = status === 429;
      throw new StoreError(throttled ? 'unavailable' : failureOfStatus(status, ifMatch !== undefined), `HTTP ${status} ${res.statusText}`.trim(), throttled);
    }
    const data = new Uint8Array(await res.arrayBuffer());
    return { data, etag, size: contentRangeTotal(res.headers.get('content-range')) ?? (res.status === 200 ? data.byteLength : undefined) };
  }

  close(): void {}
}

function networkReason(err: unknown): string {
  let e = err as { code?: string; message?: string; cause?: unknown } | undefined;
  while (e?.cause && !e.code) e = e.cause as typeof e;
  return e?.code ? `${e.code}${e.message ? `: ${oneLine(e.message)}` : ''}` : oneLine(String((err as Error).message));
}
