// The table at the end of `make bench-node-versions` (scripts/bench-node-versions.sh): one row per Node.js version
// and round, from the logs and JSON each bench left in the folder given. Per version it also prints the mean of its
// rounds and that mean against the machine's Node.js (lower CPU is better, higher req/s is better).
//   node --import tsx bench/node-versions.ts .tmp/node-versions
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fmt, table } from './lib.js';

/** One BENCH=tiles row as tiles.bench.ts writes it to bench/data/tiles-bench.json. */
interface TilesRow {
  scenario: string;
  rps: number;
  p99: number;
  cpuPerRequestUs?: number;
  failures: number;
}

/** What one version's round measured. */
interface Round {
  version: string;
  round: number;
  node: string;
  hot?: TilesRow;
  spread?: TilesRow;
  /** Server CPU per distinct rendered tile of the 4-user browse, in ms (absent without BENCH_NODE_BROWSE). */
  browseMs?: number;
  browseTileP95?: number;
  browseErrors?: number;
}

const dir = process.argv[2];
if (!dir || !existsSync(dir)) {
  process.stderr.write('usage: node --import tsx bench/node-versions.ts FOLDER (as scripts/bench-node-versions.sh leaves it)\n');
  process.exit(2);
}

const rounds: Round[] = [];
for (const file of readdirSync(dir).sort()) {
  const m = /^tiles-(.+)-(\d+)\.json$/.exec(file);
  if (!m) continue;
  const [, version, n] = m;
  const rows = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as TilesRow[];
  const log = readFileSync(path.join(dir, `tiles-${version}-${n}.log`), 'utf8');
  const round: Round = {
    version,
    round: Number(n),
    node: /\bnode (v\d+\.\d+\.\d+)/.exec(log)?.[1] ?? '?',
    hot: rows.find((r) => r.scenario.startsWith('hot tile')),
    spread: rows.find((r) => r.scenario.startsWith('spread')),
  };
  const browseLog = path.join(dir, `browse-${version}-${n}.log`);
  if (existsSync(browseLog)) {
    const text = readFileSync(browseLog, 'utf8');
    const cpu = /4 user\(s\): ([\d,.]+) ms of server CPU per distinct tile/.exec(text);
    if (cpu) round.browseMs = Number(cpu[1].replace(/,/g, ''));
    // The results table's row of 4 users: users, fills, fill p50, fill p95, fill max, tile p50, tile p95, ..., errors.
    const row = text.split('\n').find((l) => /^\s*4\s{2,}\d/.test(l));
    if (row) {
      const cells = row.trim().split(/\s{2,}/);
      round.browseTileP95 = Number(cells[6]?.replace(/,/g, ''));
      round.browseErrors = Number(cells[cells.length - 1]);
    }
  }
  rounds.push(round);
}
if (rounds.length === 0) {
  process.stderr.write(`node-versions: no tiles-VERSION-ROUND.json in ${dir}\n`);
  process.exit(1);
}

const num = (v: number | undefined, digits = 0) => (v === undefined || Number.isNaN(v) ? '-' : fmt(v, digits));
const head = ['Node.js', 'round', 'hot req/s', 'hot CPU/req us', 'spread req/s', 'spread CPU/req us', 'spread p99 ms', 'browse CPU ms/tile', 'browse tile p95 ms', 'browse errors'];
const rows = rounds
  .sort((a, b) => a.round - b.round)
  .map((r) => [
    `${r.version} (${r.node})`,
    String(r.round),
    num(r.hot?.rps),
    num(r.hot?.cpuPerRequestUs),
    num(r.spread?.rps),
    num(r.spread?.cpuPerRequestUs),
    num(r.spread?.p99),
    num(r.browseMs),
    num(r.browseTileP95),
    num(r.browseErrors),
  ]);
process.stdout.write(`\n${table([head, ...rows])}\n`);

/** The mean of a measure over a version's rounds, undefined when no round has it. */
const mean = (rs: Round[], pick: (r: Round) => number | undefined) => {
  const vs = rs.map(pick).filter((v): v is number => v !== undefined && !Number.isNaN(v));
  return vs.length ? vs.reduce((a, b) => a + b, 0) / vs.length : undefined;
};
const versions = [...new Set(rounds.map((r) => r.version))];
const baseline = versions.includes('machine') ? 'machine' : versions[0];
const measures: [string, (r: Round) => number | undefined][] = [
  ['hot CPU/req', (r) => r.hot?.cpuPerRequestUs],
  ['spread CPU/req', (r) => r.spread?.cpuPerRequestUs],
  ['browse CPU/tile', (r) => r.browseMs],
];
const base = rounds.filter((r) => r.version === baseline);
const summary = [['Node.js', 'rounds', ...measures.map(([name]) => `${name} (mean; vs ${baseline})`)]];
for (const v of versions) {
  const rs = rounds.filter((r) => r.version === v);
  summary.push([
    `${v} (${rs[0].node})`,
    String(rs.length),
    ...measures.map(([, pick]) => {
      const m = mean(rs, pick);
      const b = mean(base, pick);
      return m === undefined ? '-' : `${fmt(m, 0)} (${b ? `${fmt(m / b, 2)}x` : '-'})`;
    }),
  ]);
}
process.stdout.write(`\nmeans per version (CPU: lower is cheaper)\n${table(summary)}\n`);
