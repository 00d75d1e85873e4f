// The table scripts/bench-debian13.sh ends with: every floor run (bench/floor.bench.ts) of each release and variant
// (GL stack, LP_NUM_THREADS), then each variant's Debian 13 cost against Debian 12's and each variant against the
// service's own (lavapipe, LP_NUM_THREADS 0) on the same release. On a shared machine single runs move by 20 % and
// more (bench/RESULTS.md), so a difference is called beyond the noise only when each side has two runs or more and
// every run of one side is below every run of the other: the ranges do not overlap. One run says nothing of the noise.
//
//   node --import tsx bench/floor-compare.ts .tmp/bench-debian13/rows.jsonl
import { readFileSync } from 'node:fs';
import { fmt, table } from './lib.js';

/** One run as the script writes it: which round and release, the package versions, the floor's row or a failure. */
export interface RunLine {
  round: number;
  release: string;
  versions: string;
  row?: { gl: string; lp: string; renderer: string; msPerTile: number; renderer_ms: number; gpu_ms: number; pssMB: number; rssMB: number; lpThreads: number; steal: number };
  failed?: string;
  log?: string;
}

/** The runs of one release and variant. */
interface Cell {
  release: string;
  variant: string;
  runs: NonNullable<RunLine['row']>[];
  failed: number;
}

/** How two sets of runs compare: the ratio of their means, and whether they have runs enough whose ranges do not overlap. */
export function compareRuns(a: number[], b: number[]): { ratio: number; beyondNoise: boolean; single: boolean } {
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const single = a.length < 2 || b.length < 2;
  const beyondNoise = !single && (Math.max(...a) < Math.min(...b) || Math.max(...b) < Math.min(...a));
  return { ratio: mean(a) / mean(b), beyondNoise, single };
}

const variantOf = (r: { gl: string; lp: string }) => (r.gl === 'swiftshader' ? 'swiftshader' : `${r.gl} LP_NUM_THREADS=${r.lp}`);

export function compareTable(lines: RunLine[]): string[] {
  const cells = new Map<string, Cell>();
  const versions = new Map<string, string>();
  for (const l of lines) {
    if (l.versions) versions.set(l.release, l.versions.replace(/, $/, ''));
    const variant = l.row ? variantOf(l.row) : (l.failed ?? '?');
    const key = `${l.release}|${variant}`;
    let c = cells.get(key);
    if (!c) cells.set(key, (c = { release: l.release, variant, runs: [], failed: 0 }));
    if (l.row) c.runs.push(l.row);
    else c.failed++;
  }
  const out: string[] = [];
  for (const [release, v] of versions) out.push(`${release}: ${v}`);
  const rows: string[][] = [['release', 'variant', 'runs', 'CPU ms per tile (each run)', 'mean', 'renderer ms', 'gpu ms', 'peak PSS MB', 'llvmpipe threads', 'steal %']];
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / Math.max(1, xs.length);
  for (const c of cells.values()) {
    const ms = c.runs.map((r) => r.msPerTile);
    rows.push([
      c.release,
      c.variant,
      `${c.runs.length}${c.failed ? ` (+${c.failed} failed)` : ''}`,
      ms.map((m) => fmt(m)).join(', '),
      fmt(mean(ms)),
      fmt(mean(c.runs.map((r) => r.renderer_ms))),
      fmt(mean(c.runs.map((r) => r.gpu_ms))),
      fmt(Math.max(0, ...c.runs.map((r) => r.pssMB))),
      c.runs.map((r) => r.lpThreads).join(', '),
      fmt(100 * Math.max(0, ...c.runs.map((r) => r.steal)), 1),
    ]);
  }
  out.push(table(rows));
  const verdict = (what: string, a: Cell | undefined, b: Cell | undefined) => {
    if (!a?.runs.length || !b?.runs.length) return;
    const r = compareRuns(a.runs.map((x) => x.msPerTile), b.runs.map((x) => x.msPerTile));
    out.push(`${what}: ${fmt(r.ratio, 2)}x the CPU per tile, ${r.single ? 'one run on a side: no measure of the noise' : r.beyondNoise ? 'beyond the noise (the runs do not overlap)' : 'within the noise (the runs overlap)'}`);
  };
  const variants = [...new Set([...cells.values()].map((c) => c.variant))];
  for (const variant of variants) verdict(`${variant}: Debian 13 against Debian 12`, cells.get(`trixie|${variant}`), cells.get(`host|${variant}`));
  const service = 'lavapipe LP_NUM_THREADS=0';
  for (const release of ['host', 'trixie'])
    for (const variant of variants) if (variant !== service) verdict(`${release}: ${variant} against ${service}`, cells.get(`${release}|${variant}`), cells.get(`${release}|${service}`));
  const failed = lines.filter((l) => l.failed);
  for (const f of failed) out.push(`failed: ${f.release} ${f.failed} (round ${f.round}; log ${f.log})`);
  return out;
}

if (process.argv[2]) {
  const lines = readFileSync(process.argv[2], 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as RunLine);
  for (const line of compareTable(lines)) console.log(line);
}
