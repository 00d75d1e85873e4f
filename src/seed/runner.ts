// A seed run: the tiles of an area and zoom range asked of the in-process service (service.ts), a few at a time,
// into an archive (outputs.ts) or only into the service's caches (--warm), with progress (progress.ts).
// Failures are counted, not fatal: a tile that fails after its retries is left out, and --resume asks again.
// SIGINT/SIGTERM stop asking, let the tiles in flight finish and make a valid archive of what was done; a
// second signal leaves at once (the journal keeps what was done for --resume).
import { gzipSync } from 'node:zlib';
import type { LoadedConfig } from '../config/load.js';
import { renderersPerProcess } from '../config/sizing.js';
import type { Logger } from '../log.js';
import { renderMetrics, type BulkFrameResult } from '../render/metrics.js';
import { sharedCache } from '../shared-cache/client.js';
import type { TileCoord } from '../tiles/coords.js';
import { bboxCoverage, countPerZoom, geojsonCoverage, tilesOf, type Coverage } from './coverage.js';
import type { Journal } from './journal.js';
import { finishArchive, openJournal, type ArchiveDescription } from './outputs.js';
import { ProgressReporter, type ProgressCounts, type ProgressLine, type ProgressSink } from './progress.js';
import type { BBox, SeedFormat, SeedRequest } from './request.js';
import { startInProcess, type InProcessService } from './service.js';

/** A mistake in what was asked (an unknown id, a format the target cannot give): exit 2, like a bad flag. */
export class SeedUsageError extends Error {}
/** The run could not be done (the shared cache unreachable for --warm, nothing to write): exit 1. */
export class SeedRunError extends Error {}

export interface SeedIo {
  /** --dry-run counts, and the JSON progress lines off a terminal. */
  stdout: ProgressSink;
  /** The progress bar on a terminal, and messages. */
  stderr: ProgressSink;
  tty: boolean;
  columns?: number;
}

/**
 * Tiles asked at once unless --concurrency says otherwise: enough for the render batches to fill their blocks; for a
 * style, the tiles of one bulk frame (render.bulk_metatile) per renderer and one more, so that every renderer draws
 * a frame while the next gathers its tiles. (Two frames' worth, whatever the pool, kept all but two renderers of a
 * large seeding host idle.)
 */
const DEFAULT_CONCURRENCY = 8;
export const defaultConcurrency = (frame: number, renderers: number) => Math.max(DEFAULT_CONCURRENCY, (renderers + 1) * frame * frame);
/** A 503 (render queue full, renderer restarting) is asked again after its Retry-After, this many times. */
const RETRIES = 4;
const SHARED_CONNECT_MS = 10_000;

interface TargetInfo {
  format: SeedFormat;
  description: ArchiveDescription;
}

type Fetched = { kind: 'tile'; data: Buffer } | { kind: 'empty' } | { kind: 'error'; message: string };

export function coverageOf(req: SeedRequest): Coverage {
  return req.area.kind === 'bbox' ? bboxCoverage(req.area.bbox) : geojsonCoverage(req.area.file);
}

/** The --dry-run answer: tiles per zoom and the total, one line each. */
export function dryRunText(counts: Map<number, number>): string {
  let total = 0;
  let text = '';
  for (const [z, n] of counts) {
    total += n;
    text += `zoom ${z}: ${n} tiles\n`;
  }
  return `${text}total: ${total} tiles\n`;
}

const tilePath = (req: SeedRequest, format: SeedFormat, t: TileCoord) =>
  req.target.kind === 'style'
    ? `/styles/${encodeURIComponent(req.target.id)}/${req.tileSize === 256 ? '256/' : ''}${t.z}/${t.x}/${t.y}${req.scale > 1 ? `@${req.scale}x` : ''}.${format}`
    : `/data/${encodeURIComponent(req.target.id)}/${t.z}/${t.x}/${t.y}.${format}`;

function intersect(a: BBox, b: readonly number[] | undefined): BBox {
  if (!b || b.length !== 4) return a;
  const r: BBox = [Math.max(a[0], b[0]), Math.max(a[1], b[1]), Math.min(a[2], b[2]), Math.min(a[3], b[3])];
  return r[0] < r[2] && r[1] < r[3] ? r : a;
}

/** What the target is (its TileJSON): the format to ask for and the archive's metadata. */
async function describeTarget(service: InProcessService, req: SeedRequest, coverage: Coverage): Promise<TargetInfo> {
  const { kind, id } = req.target;
  const res = await service.get(kind === 'style' ? `/styles/${encodeURIComponent(id)}.json` : `/data/${encodeURIComponent(id)}.json`);
  if (res.status === 404) throw new SeedUsageError(`--${kind}: the configuration has no ${kind} "${id}"`);
  if (!res.ok) throw new SeedUsageError(`--${kind} ${id}: ${((await res.json().catch(() => ({}))) as { detail?: string }).detail ?? `answered ${res.status}`}`);
  const tj = (await res.json()) as { name?: string; format?: string; description?: string; attribution?: string; bounds?: number[]; vector_layers?: unknown[] };
  const format = req.format ?? (kind === 'style' ? 'png' : (tj.format as SeedFormat));
  if (req.keepEmpty && format !== 'pbf' && format !== 'mlt') throw new SeedUsageError(`--keep-empty: an empty ${format} tile has no image to write; it applies to vector tiles (pbf, mlt)`);
  return {
    format,
    description: {
      name: tj.name ?? id,
      format,
      bounds: intersect(coverage.bbox, tj.bounds),
      minzoom: req.minZoom,
      maxzoom: req.maxZoom,
      description: tj.description,
      attribution: tj.attribution,
      vectorLayers: format === 'pbf' || format === 'mlt' ? (tj.vector_layers ?? []) : undefined,
    },
  };
}

/** One tile from the service: 200 bytes (vector tiles gzip-compressed, as archives store them), 204 empty, or why not. */
async function fetchTile(service: InProcessService, path: string, vector: boolean): Promise<Fetched> {
  for (let attempt = 0; ; attempt++) {
    let res: Response;
    try {
      res = await service.get(path, vector ? { 'accept-encoding': 'gzip' } : {});
    } catch (err) {
      return { kind: 'error', message: (err as Error).message };
    }
    if (res.status === 204) return { kind: 'empty' };
    if (res.status === 200) {
      const body = Buffer.from(await res.arrayBuffer());
      if (body.byteLength === 0) return { kind: 'empty' };
      if (!vector) return { kind: 'tile', data: body };
      return { kind: 'tile', data: res.headers.get('content-encoding') === 'gzip' ? body : gzipSync(body) };
    }
    const text = await res.text().catch(() => '');
    let detail = text.slice(0, 200);
    try {
      detail = (JSON.parse(text) as { detail?: string }).detail ?? detail;
    } catch {
      // not a problem document: its first characters say enough
    }
    if (res.status === 503 && attempt < RETRIES) {
      const wait = Math.min(10, Number(res.headers.get('retry-after')) || 1);
      await new Promise((r) => setTimeout(r, wait * 1000));
      continue;
    }
    return { kind: 'error', message: `${res.status} ${detail}` };
  }
}

async function waitForSharedCache(loaded: LoadedConfig): Promise<void> {
  const url = loaded.config.cache.shared;
  if (url === undefined) return;
  const until = Date.now() + SHARED_CONNECT_MS;
  while (sharedCache.state.state !== 'connected') {
    if (Date.now() > until) throw new SeedRunError(`--warm: the shared cache ([cache] shared) is not reachable; the tiles would be cached on this machine only`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Runs a seed; resolves to the process's exit code (0 done, 1 tiles failed, 130/143 stopped by a signal). */
export async function runSeed(req: SeedRequest, loaded: LoadedConfig, log: Logger, io: SeedIo): Promise<number> {
  const coverage = coverageOf(req);
  const perZoom = countPerZoom(coverage, req.minZoom, req.maxZoom);
  if (req.dryRun) {
    io.stdout.write(dryRunText(perZoom));
    return 0;
  }
  const total = [...perZoom.values()].reduce((a, b) => a + b, 0);
  const service = await startInProcess(loaded, log, { render: req.target.kind === 'style' });
  // The seed's bulk frames by result, as render_bulk_frames_total counts them in a server (the seed has no metrics
  // listener): said at the end, so a stack that could not draw the large frames shows in the seed's own output.
  const frames: Record<BulkFrameResult, number> = { drawn: 0, smaller: 0, failed: 0 };
  const countFrame = (f: { result: BulkFrameResult }) => void frames[f.result]++;
  renderMetrics.on('bulkFrame', countFrame);
  let journal: Journal | undefined;
  let stopSignal: NodeJS.Signals | undefined;
  const onSignal = (sig: NodeJS.Signals) => {
    if (stopSignal) process.exit(sig === 'SIGINT' ? 130 : 143);
    stopSignal = sig;
    io.stderr.write(`${io.tty ? '\n' : ''}tileserver-ts seed: ${sig}: finishing the tiles in flight and writing what was done (again to quit at once)\n`);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const target = await describeTarget(service, req, coverage);
    const vector = target.format === 'pbf' || target.format === 'mlt';
    if (req.warm) await waitForSharedCache(loaded);
    journal = req.out !== undefined ? await openJournal(req.out, req.resume, () => tilesOf(coverage, req.minZoom, req.maxZoom)) : undefined;
    const done = journal?.doneKeys() ?? new Set<string>();

    const counts: ProgressCounts = { total, done: 0, skipped: 0, fetched: 0, written: 0, empty: 0, errors: 0 };
    const progress = new ProgressReporter(counts, io.tty ? io.stderr : io.stdout, io.tty, io.columns);
    const errorsShown = new Set<string>();
    progress.start();
    // A style's tiles frame by frame (coverage.ts); a source's have no frames.
    const frame = req.target.kind === 'style' ? loaded.config.render.bulk_metatile : 1;
    const tiles = tilesOf(coverage, req.minZoom, req.maxZoom, frame);
    const worker = async () => {
      while (!stopSignal) {
        const next = tiles.next();
        if (next.done) return;
        const t = next.value;
        if (done.has(`${t.z}/${t.x}/${t.y}`)) {
          counts.skipped++;
          counts.done++;
          continue;
        }
        const got = await fetchTile(service, tilePath(req, target.format, t), vector);
        counts.fetched++;
        if (got.kind === 'tile') {
          journal?.put(t.z, t.x, t.y, got.data);
          counts.written++;
        } else if (got.kind === 'empty') {
          counts.empty++;
          if (req.keepEmpty && journal) {
            journal.put(t.z, t.x, t.y, gzipSync(Buffer.alloc(0)));
            counts.written++;
          } else journal?.markEmpty(t.z, t.x, t.y);
        } else {
          counts.errors++;
          // Each distinct failure once: a thousand tiles failing alike make one line, not a thousand.
          if (errorsShown.size < 20 && !errorsShown.has(got.message)) {
            errorsShown.add(got.message);
            log.warn({ tile: `${t.z}/${t.x}/${t.y}`, err: got.message }, 'seed: tile failed');
          }
        }
        counts.done++;
      }
    };
    // The seed's renderers, counted as its render pool counts them (src/render/pool-keeper.ts).
    const renderers = renderersPerProcess(loaded.config.render.pool_size, loaded.config.server.workers);
    await Promise.all(Array.from({ length: req.concurrency ?? defaultConcurrency(frame, renderers) }, worker));
    if (journal && req.out !== undefined) {
      const finishing = journal;
      journal = undefined;
      finishArchive(finishing, req.out, target.description);
    }
    const last = progress.finish(stopSignal ? 'interrupted' : 'done');
    if (req.target.kind === 'style') log.info({ bulk_frames: frames }, 'seed: bulk frames drawn, drawn in smaller blocks (the frame limit) and failed (drawn again smaller)');
    if (stopSignal) return stopSignal === 'SIGINT' ? 130 : 143;
    return last.errors > 0 ? 1 : 0;
  } finally {
    renderMetrics.off('bulkFrame', countFrame);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    journal?.close();
    await service.close();
  }
}
