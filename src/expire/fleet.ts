// The fleet's expiries: every machine's hub publishes the batches accepted on it to one Redis stream (on the
// `[cache] shared` server) and reads everyone else's from it, so an expiry given at any machine reaches all of
// them within a second (a blocking XREAD wakes as soon as an entry is added).
//
// - Bounded: the stream is trimmed to about STREAM_MAX_LEN entries (XADD MAXLEN ~), and a batch travels as parts
//   of at most a megabyte (parts.ts), each an entry; a machine skips its own entries.
// - Restarts: the id of the last entry applied is kept beside the journal (journal.ts); a machine that starts (or
//   whose Redis comes back) reads on from it, so what was published while it was away is applied. A machine with
//   no position yet starts at the stream's end: whatever was published before it existed concerns caches it does
//   not have. When entries after its position were trimmed away meanwhile (it was away for more than
//   STREAM_MAX_LEN entries), it cannot know what they expired: it says so (log, `lost` metric) and expires every
//   source whole on this machine (`onLost`), as a lost NOTIFY session does, which is sound whatever was missed.
// - Redis down: batches accepted meanwhile wait in an outbox (at most OUTBOX_BYTES; the oldest are dropped and
//   counted beyond) and are published, in order, once Redis answers again. A Redis restarted empty loses what
//   its stream held: a machine that was down at the same time misses the entries it had not read (documented).
// - Time: a batch carries the time its machine accepted it, compared with the times other machines wrote into
//   their cache entries: the fleet's clocks must agree (NTP), as mod_tile's tile times assume.
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';
import { encodedLength, type EncodedBatch, type ExpiryBatch } from './batch.js';
import { machineFigures, machineMetrics as fleetMetrics } from './machine-metrics.js';
import { batchParts, PartAssembler } from './parts.js';

/** The stream's key (under the shared cache's prefix, so `SCAN MATCH tsts:*` finds it). */
export const STREAM_KEY = 'tsts:v1:expire';
/** Entries the stream keeps (about: MAXLEN ~ trims whole nodes). */
export const STREAM_MAX_LEN = 10_000;
/** Bytes of encoded batches waiting for Redis at most. */
export const OUTBOX_BYTES = 64 << 20;
/** Longest wait of one XREAD; the loop then asks again (and notices a closed link). */
const BLOCK_MS = 2_000;

/** Where the fleet link keeps the id of the last entry it applied. */
export interface StreamPosition {
  streamPosition: string | undefined;
}

/** Whether stream id `a` comes after `b` ("ms-seq"). */
function after(a: string, b: string): boolean {
  const [am, as] = a.split('-').map(Number);
  const [bm, bs] = b.split('-').map(Number);
  return am !== bm ? am > bm : as > bs;
}

export class FleetStream {
  /** This machine in the stream's entries: its own are skipped when read. */
  readonly origin = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private writer: Redis | undefined;
  private reader: Redis | undefined;
  private closed = false;
  private readonly outbox: { id: string; parts: Buffer[]; bytes: number }[] = [];
  private outboxBytes = 0;
  private flushing = false;
  /** Publishing failed and has not succeeded since (one warning per outage). */
  private stuck = false;
  private readonly assembler = new PartAssembler();
  private loop: Promise<void> | undefined;

  constructor(
    private readonly url: string,
    private readonly timeoutMs: number,
    private readonly position: StreamPosition,
    /** Applies a batch of another machine (the machine hub's `take`); false when the machine had it. */
    private readonly onBatch: (batch: ExpiryBatch) => boolean,
    private readonly log: Logger,
    /** Entries this machine did not read were trimmed: what they expired is unknown here. */
    private readonly onLost: () => void = () => {},
  ) {}

  /** Connects (ioredis is loaded on first use, as the shared cache does) and starts reading. */
  async start(): Promise<void> {
    const { Redis } = await import('ioredis');
    const options = { connectTimeout: Math.max(1_000, this.timeoutMs * 10), maxRetriesPerRequest: 0, retryStrategy: (times: number) => Math.min(100 * times, 2_000) };
    // Without a connection a publish fails at once (and waits in the outbox) instead of in ioredis's queue.
    this.writer = new Redis(this.url, { ...options, enableOfflineQueue: false, commandTimeout: Math.max(2_000, this.timeoutMs) });
    this.writer.on('error', () => {});
    this.writer.on('ready', () => void this.flush());
    // The reader blocks in XREAD: a connection of its own, with no command timeout.
    this.reader = new Redis(this.url, { ...options, enableOfflineQueue: true });
    this.reader.on('error', () => {});
    this.loop = this.read();
  }

  /** Publishes a batch accepted on this machine (now, or from the outbox once Redis answers). */
  publish(batch: ExpiryBatch, encoded: EncodedBatch): void {
    if (this.closed) return;
    const bytes = encodedLength(encoded);
    this.outbox.push({ id: batch.id, parts: batchParts(encoded), bytes });
    this.outboxBytes += bytes;
    while (this.outboxBytes > OUTBOX_BYTES && this.outbox.length > 1) {
      this.outboxBytes -= this.outbox.shift()!.bytes;
      fleetMetrics.emit('dropped');
      this.log.warn({ outbox_bytes: OUTBOX_BYTES }, 'expiry fleet: the outbox is full (Redis has been unreachable); the oldest batch waiting is dropped, other machines will not see it');
    }
    machineFigures.outbox = this.outbox.length;
    void this.flush();
  }

  /** Sends what waits, in order; stops at the first failure (the writer's next `ready` resumes). */
  private async flush(): Promise<void> {
    if (this.flushing || !this.writer) return;
    this.flushing = true;
    try {
      while (this.outbox.length && !this.closed) {
        const next = this.outbox[0];
        try {
          for (let i = 0; i < next.parts.length; i++) {
            await this.writer.xadd(STREAM_KEY, 'MAXLEN', '~', String(STREAM_MAX_LEN), '*', 'o', this.origin, 'b', next.id, 'p', String(i), 'n', String(next.parts.length), 'd', next.parts[i]);
          }
        } catch (err) {
          if (!this.stuck) this.log.warn({ err: (err as Error).message, waiting: this.outbox.length }, 'expiry fleet: cannot publish; batches wait until Redis answers');
          this.stuck = true;
          // A timeout on a connection that stays up brings no `ready` to resume on: try again later as well.
          setTimeout(() => void this.flush(), 1_000).unref();
          return;
        }
        this.outbox.shift();
        this.outboxBytes -= next.bytes;
        if (this.stuck) this.log.info({ waiting: this.outbox.length }, 'expiry fleet: publishing again');
        this.stuck = false;
        machineFigures.outbox = this.outbox.length;
      }
    } finally {
      this.flushing = false;
    }
  }

  private async read(): Promise<void> {
    let from = this.position.streamPosition;
    let checkGap = from !== undefined;
    let down = false;
    while (!this.closed) {
      try {
        if (from === undefined) {
          // First start: from the stream's end ('0-0' when it is empty, so that the first entry is read).
          const last = await this.reader!.xrevrange(STREAM_KEY, '+', '-', 'COUNT', 1);
          from = last[0]?.[0] ?? '0-0';
          this.position.streamPosition = from;
        }
        if (checkGap) {
          await this.checkGap(from);
          checkGap = false;
        }
        const reply = await this.reader!.xreadBuffer('COUNT', 64, 'BLOCK', BLOCK_MS, 'STREAMS', STREAM_KEY, from);
        if (down) this.log.info('expiry fleet: reading the stream again');
        down = false;
        if (!reply) continue;
        for (const [, entries] of reply as [Buffer, [Buffer, Buffer[]][]][]) {
          for (const [rawId, fields] of entries) {
            this.entry(rawId.toString(), fields);
            from = rawId.toString();
          }
        }
        this.position.streamPosition = from!;
      } catch (err) {
        if (this.closed) return;
        if (!down) this.log.warn({ err: (err as Error).message }, 'expiry fleet: cannot read the stream; retrying (nothing published meanwhile is lost: reading resumes where it stopped)');
        down = true;
        // Entries may have been trimmed while it was unreachable.
        checkGap = from !== undefined;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  }

  /**
   * Whether entries after `from` were trimmed before this machine read them. Trimming takes the oldest entries
   * first, so while the entry at `from` is still in the stream nothing after it is gone; once it is gone and others
   * were added since, some of those may be too (Redis 7.0 leaves max-deleted-entry-id alone on a trim, so that
   * cannot tell), unless nothing was ever trimmed from the stream. Taken as lost then: at worst, a radix node ending at `from` was trimmed and nothing unread with
   * it, and this machine expires more than it had to, never less.
   */
  private async checkGap(from: string): Promise<void> {
    if (from === '0-0') return;
    const info = (await this.reader!.call('XINFO', 'STREAM', STREAM_KEY).catch(() => undefined)) as unknown[] | undefined;
    if (!info) return;
    const field = (name: string) => {
      const at = info.indexOf(name);
      return at >= 0 ? String(info[at + 1]) : undefined;
    };
    const last = field('last-generated-id');
    if (!last || !after(last, from)) return;
    // A stream nothing was ever trimmed from (a Redis restarted empty holds a new one) holds every entry it got.
    if (Number(field('entries-added')) === Number(field('length'))) return;
    const [kept] = await this.reader!.xrange(STREAM_KEY, from, '+', 'COUNT', 1);
    if (kept?.[0] === from) return;
    fleetMetrics.emit('lost');
    this.log.warn({ position: from, last }, 'expiry fleet: entries published while this machine was away were trimmed from the stream before it read them; every source is expired whole here');
    this.onLost();
  }

  private entry(id: string, fields: Buffer[]): void {
    const f = new Map<string, Buffer>();
    for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i].toString(), fields[i + 1]);
    if (f.get('o')?.toString() === this.origin) return;
    const data = f.get('d');
    if (!data) return;
    try {
      const batch = this.assembler.add({ id: f.get('b')?.toString() ?? id, part: Number(f.get('p')), parts: Number(f.get('n')), data });
      if (!batch) return;
      const lag = Date.now() - batch.at;
      if (this.onBatch(batch)) fleetMetrics.emit('received', lag);
    } catch (err) {
      this.log.warn({ entry: id, err: (err as Error).message }, 'expiry fleet: an entry of the stream is not a batch; ignored');
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const r of [this.writer, this.reader]) r?.disconnect();
    await this.loop?.catch(() => {});
  }
}
