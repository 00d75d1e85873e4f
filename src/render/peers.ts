// Render ownership across the worker processes of one machine. Each process has its own browsers, and a map
// client's six connections land on different processes: left alone, every process would draw (and parse the source
// tiles of) the same neighbourhood. So each block of 4 x 4 tiles (per zoom) has one owner process, chosen by a hash
// of the block; a process asked for a tile it does not own, and has not cached, forwards the request to the owner
// over a Unix socket and keeps the answer. The owner's pages then see whole neighbourhoods: the source tiles one
// metatile parsed are still in the page when the next metatile of the same view needs them (docs/rendering.md).
//
// The socket is in Linux's abstract namespace (no file to leave behind after a crash), named after the primary's
// pid and the worker's slot; requests carry a token only the cluster knows. An owner that does not answer (being
// replaced after a crash, or still starting) costs nothing but the local render the process would have done anyway.
import http from 'node:http';
import type { Logger } from '../log.js';
import { RenderError, renderErrorFrom } from './renderer.js';

/** What the primary gives each worker: its slot among `count`, the socket name prefix and the cluster's token. */
export interface PeerLink {
  slot: number;
  count: number;
  /** Abstract socket name prefix; slot s listens on `${name}-${s}`. */
  name: string;
  token: string;
}

export const PEER_ENV = 'TSTS_RENDER_PEERS';
/** Header of a forwarded request: the cluster's token. */
export const PEER_HEADER = 'x-tileserver-ts-peer';
/** Header of a forwarded request: the client it was forwarded for (trusted only beside the token). */
export const PEER_CLIENT_HEADER = 'x-tileserver-ts-client';
/** Header of the owner's answer to a forwarded request: when its image was made (ms), for the forwarder's expiry checks. */
export const PEER_MADE_AT_HEADER = 'x-tileserver-ts-made-at';
/** Edge of an ownership block in tiles: a multiple of every metatile size (1, 2, 4). */
export const OWNER_BLOCK = 4;

export function peerLinkFromEnv(env: NodeJS.ProcessEnv = process.env): PeerLink | undefined {
  const raw = env[PEER_ENV];
  if (!raw) return undefined;
  try {
    const v = JSON.parse(raw) as PeerLink;
    if (Number.isInteger(v.slot) && Number.isInteger(v.count) && v.count > 1 && v.slot >= 0 && v.slot < v.count && typeof v.name === 'string' && typeof v.token === 'string') return v;
  } catch {
    /* not from our primary */
  }
  return undefined;
}

/** The owner slot of a tile: a hash of its zoom and 4 x 4 block, spread evenly over `count` slots. */
export function ownerSlot(z: number, x: number, y: number, count: number): number {
  let h = Math.imul(z + 1, 0x9e3779b1) ^ Math.imul(Math.floor(x / OWNER_BLOCK) + 1, 0x85ebca6b) ^ Math.imul(Math.floor(y / OWNER_BLOCK) + 1, 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  return (h >>> 0) % count;
}

/** An answer forwarded from the owner. */
export interface PeerAnswer {
  body: Buffer;
  etag: string;
  contentType: string;
  /** The owner's Server-Timing header (where its render's time went, or which of its caches answered). */
  timing: string | undefined;
  /** When the image was made (ms; 0 when the owner did not say: older than any expiry). */
  madeAt: number;
  /** The owner answered an expired tile's old image (Cache-Status `fwd=stale`) while it draws it again. */
  stale: boolean;
}

const socketPath = (link: PeerLink, slot: number) => `\0${link.name}-${slot}`;

export class RenderPeers {
  private server: http.Server | undefined;
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  /** Owners that did not answer, until when (epoch ms) they are not asked again. */
  private readonly down = new Map<number, number>();
  /** Forwarded requests answered by the owner, and those rendered here because the owner did not answer. */
  readonly counts = { forwarded: 0, fellBack: 0 };

  constructor(
    readonly link: PeerLink,
    private readonly log: Logger,
  ) {}

  /** Serves forwarded requests with `listener` (the process's own app) on this slot's socket. */
  async listen(listener: http.RequestListener): Promise<void> {
    const server = http.createServer(listener);
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // Exclusive: bound by this worker itself, not shared through the cluster's primary (a socket the primary held
      // would outlive a crashed owner and take connections no one answers).
      server.listen({ path: socketPath(this.link, this.link.slot), exclusive: true }, () => resolve());
    });
    this.server = server;
  }

  /** The request came from another process of this cluster (it must be drawn here, never forwarded again). */
  isPeerRequest(header: string | null | undefined): boolean {
    return header === this.link.token;
  }

  /** The slot that draws this tile, or undefined when it is this process. */
  ownerOf(z: number, x: number, y: number): number | undefined {
    const slot = ownerSlot(z, x, y, this.link.count);
    return slot === this.link.slot ? undefined : slot;
  }

  /**
   * Asks `slot` for `path` (a render route of this service). Resolves with its image; rejects with its RenderError
   * (a full queue, a timeout: the same answer the client would get here); resolves undefined when the owner cannot
   * be reached, so the caller draws it itself.
   */
  forward(slot: number, path: string, signal: AbortSignal | undefined, client: string | undefined, timeoutMs: number): Promise<PeerAnswer | undefined> {
    const until = this.down.get(slot);
    if (until !== undefined && until > Date.now()) return Promise.resolve(undefined);
    if (signal?.aborted) return Promise.reject(new RenderError('cancelled', 'the client went away'));
    return new Promise((resolve, reject) => {
      const req = http.get({ socketPath: socketPath(this.link, slot), path, agent: this.agent, headers: { [PEER_HEADER]: this.link.token, ...(client ? { [PEER_CLIENT_HEADER]: client } : {}) } }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', () => resolve(undefined));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          if (res.statusCode === 200) {
            this.counts.forwarded++;
            return resolve({
              body,
              etag: String(res.headers.etag ?? ''),
              contentType: String(res.headers['content-type'] ?? 'application/octet-stream'),
              timing: res.headers['server-timing'] as string | undefined,
              madeAt: Number(res.headers[PEER_MADE_AT_HEADER]) || 0,
              stale: /;\s*fwd=stale\b/.test(String(res.headers['cache-status'] ?? '')),
            });
          }
          // The owner's refusal (its problem body says why) is this request's answer too.
          let reason: unknown;
          let detail = `the owner process answered ${res.statusCode}`;
          try {
            const p = JSON.parse(body.toString('utf8')) as { reason?: unknown; detail?: unknown };
            reason = p.reason;
            if (typeof p.detail === 'string') detail = p.detail;
          } catch {
            /* not problem JSON */
          }
          reject(renderErrorFrom({ reason: reason ?? 'failed', message: detail }));
        });
      });
      // An owner that takes a connection and never answers (stopped, or wedged) must not hold the client forever:
      // past the owner's own limits the answer is a timeout, and the owner is left alone for a moment.
      req.setTimeout(timeoutMs, () => {
        this.down.set(slot, Date.now() + 2_000);
        this.log.warn({ slot, timeout_ms: timeoutMs }, 'render owner did not answer in time');
        req.destroy(new RenderError('timeout', 'the process drawing this tile did not answer in time'));
      });
      const onAbort = () => req.destroy(new RenderError('cancelled', 'the client went away'));
      signal?.addEventListener('abort', onAbort, { once: true });
      req.on('close', () => signal?.removeEventListener('abort', onAbort));
      req.on('error', (err) => {
        if (err instanceof RenderError) return reject(err);
        // Not listening (starting, or replaced after a crash): draw here, and leave it alone for a moment.
        this.down.set(slot, Date.now() + 2_000);
        this.counts.fellBack++;
        this.log.debug({ slot, err: err.message }, 'render owner did not answer; drawing here');
        resolve(undefined);
      });
    });
  }

  async close(): Promise<void> {
    this.agent.destroy();
    const server = this.server;
    this.server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
