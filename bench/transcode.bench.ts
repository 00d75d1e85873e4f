// MVT <-> MLT transcoding: (0) the size of our MLT against the MVT and the format's reference encoder's MLT, raw
// and gzip, tile by tile, with encode ms per tile for the package's plain encoder (before) and the compact encoder
// (after); (1) throughput of one thread (one core) over the 11 OpenMapTiles fixture tiles in
// each direction, with the time split between decoding and encoding; (2) where each direction spends its time,
// from a --cpu-prof profile of the same loop; (3) serving through the real server with its tile cache off:
// `.mlt` of an MVT archive (a transcode per request) against `.pbf` of the same archive (stored bytes); (4) the
// p99 of a small cached tile alone and while the densest tile is transcoded over and over (the issue's bound: 2x),
// under an open loop at a steady rate (what a user feels), beside the same loop with one core kept busy by a spin
// loop or a memory-copying loop unrelated to the server (the machine's floor), then in short windows alternated
// alone/during and pooled (BENCH_INTERLEAVE_ROUNDS, 8; BENCH_INTERLEAVE_SECONDS, 4), and under a saturating closed loop.
//
//   node --import tsx bench/transcode.bench.ts        (make bench runs it; build first: node scripts/build.mjs)
//
// Environment: BENCH_TRANSCODE_SECONDS (s per direction, 8), BENCH_DURATION (s per served run, 10),
// BENCH_WARMUP (3), BENCH_CONNECTIONS (16), BENCH_PROFILE_SECONDS (4; 0 skips the profile), BENCH_ENCODE_RUNS
// (encodes per tile and encoder for the size table's timings, 5), BENCH_TRANSCODE_PARTS (the parts to run, 0,1,2,3,4),
// BENCH_NODE_ARGS (node options for the server, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Compression, TileType } from 'pmtiles';
import { buildPmtiles } from '../src/seed/pmtiles-writer.js';
import { decodeMlt, encodeMlt, encodeMltPlain } from '../src/tiles/mlt-codec.js';
import { decodeMvt } from '../src/tiles/mvt-decode.js';
import { encodeMvt } from '../src/tiles/mvt-encode.js';
import { ChildServer, cores, cycleLoad, envNumber, fmt, freePort, httpGet, openLoop, ROOT, table } from './lib.js';

const SECONDS = envNumber('BENCH_TRANSCODE_SECONDS', 8);
const PROFILE_SECONDS = process.env.BENCH_PROFILE_SECONDS === '0' ? 0 : envNumber('BENCH_PROFILE_SECONDS', 4);
const DURATION = envNumber('BENCH_DURATION', 10);
/** Extra node arguments for the server (profiling: BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"). */
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const WARMUP = envNumber('BENCH_WARMUP', 3);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 16);
const ENCODE_RUNS = envNumber('BENCH_ENCODE_RUNS', 5);
const HEADERS = { 'accept-encoding': 'gzip, deflate, br, zstd' };
const CLI = path.join(ROOT, 'dist/cli.js');
const OMT = path.join(ROOT, 'fixtures/vector/omt-tiles');
/** What martin (Rust) reports for MVT -> MLT on its own benchmark; quoted for scale, not measured here. */
const MARTIN_TILES_PER_S = 10_000;

interface Pair {
  name: string;
  z: number;
  x: number;
  y: number;
  mvt: Buffer;
  mlt: Buffer;
}

function pairs(): Pair[] {
  return readdirSync(OMT)
    .filter((f) => f.endsWith('.mvt'))
    .map((f) => {
      const name = f.slice(0, -4);
      const [z, x, tms] = name.split('_').map(Number);
      // Fixture names carry the TMS row (fixtures/PROVENANCE.md).
      return { name, z, x, y: 2 ** z - 1 - tms, mvt: readFileSync(path.join(OMT, `${name}.mvt`)), mlt: readFileSync(path.join(OMT, `${name}.mlt`)) };
    });
}

interface Throughput {
  tiles: number;
  bytes: number;
  decodeMs: number;
  encodeMs: number;
  /** CPU time of this process (user + system) over the loop: steadier than wall time on a shared machine. */
  cpuMs: number;
}

/** Transcodes every tile in turn for `seconds`, timing decode and encode separately. */
function loop(tiles: Pair[], from: 'mvt' | 'mlt', seconds: number, encodeToMlt: (m: ReturnType<typeof decodeMvt>) => Uint8Array = encodeMlt): Throughput {
  const r: Throughput = { tiles: 0, bytes: 0, decodeMs: 0, encodeMs: 0, cpuMs: 0 };
  const cpu0 = process.cpuUsage();
  const end = performance.now() + seconds * 1000;
  while (performance.now() < end) {
    for (const t of tiles) {
      const input = t[from];
      const t0 = performance.now();
      const model = from === 'mvt' ? decodeMvt(input) : decodeMlt(input);
      const t1 = performance.now();
      if (from === 'mvt') encodeToMlt(model);
      else encodeMvt(model);
      r.encodeMs += performance.now() - t1;
      r.decodeMs += t1 - t0;
      r.tiles++;
      r.bytes += input.length;
    }
  }
  const cpu = process.cpuUsage(cpu0);
  r.cpuMs = (cpu.user + cpu.system) / 1000;
  return r;
}

/** Median wall time of `runs` calls of `fn`, after one call to warm it up. */
function medianMs(fn: () => unknown, runs: number): number {
  fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[times.length >> 1];
}

/** (0) Sizes, raw and gzip (default level), and encode time per tile, before (plain encodeTile) and after. */
function sizes(tiles: Pair[]): void {
  process.stdout.write(`\n0. size of the MLT made from each MVT (bytes; gzip at the default level) and encode ms per tile (median of ${ENCODE_RUNS}), before (the package's plain encodeTile) and after (the compact encoder)\n`);
  const gz = (b: Uint8Array) => gzipSync(b).length;
  const rows = [['tile', 'mvt', 'reference mlt', 'before', 'after', 'after/ref', 'gzip: mvt', 'ref', 'before', 'after', 'encode ms: before', 'after']];
  const sum = { mvt: 0, ref: 0, before: 0, after: 0, gzMvt: 0, gzRef: 0, gzBefore: 0, gzAfter: 0, msBefore: 0, msAfter: 0 };
  for (const t of [...tiles].sort((a, b) => b.z - a.z)) {
    const model = decodeMvt(t.mvt);
    const before = encodeMltPlain(model);
    const after = encodeMlt(model);
    const msBefore = medianMs(() => encodeMltPlain(model), ENCODE_RUNS);
    const msAfter = medianMs(() => encodeMlt(model), ENCODE_RUNS);
    const row = { mvt: t.mvt.length, ref: t.mlt.length, before: before.length, after: after.length, gzMvt: gz(t.mvt), gzRef: gz(t.mlt), gzBefore: gz(before), gzAfter: gz(after), msBefore, msAfter };
    for (const k of Object.keys(sum) as (keyof typeof sum)[]) sum[k] += row[k];
    rows.push([`${t.z}/${t.x}/${t.y}`, fmt(row.mvt), fmt(row.ref), fmt(row.before), fmt(row.after), fmt(row.after / row.ref, 2), fmt(row.gzMvt), fmt(row.gzRef), fmt(row.gzBefore), fmt(row.gzAfter), fmt(msBefore, 1), fmt(msAfter, 1)]);
  }
  rows.push([`all ${tiles.length}`, fmt(sum.mvt), fmt(sum.ref), fmt(sum.before), fmt(sum.after), fmt(sum.after / sum.ref, 3), fmt(sum.gzMvt), fmt(sum.gzRef), fmt(sum.gzBefore), fmt(sum.gzAfter), fmt(sum.msBefore, 1), fmt(sum.msAfter, 1)]);
  process.stdout.write(table(rows) + '\n');
  process.stdout.write(`  total after/reference ${fmt(sum.after / sum.ref, 3)} (before ${fmt(sum.before / sum.ref, 3)}); encode time after/before ${fmt(sum.msAfter / sum.msBefore, 2)}x\n`);
}

function throughput(tiles: Pair[]): void {
  process.stdout.write(`\n1. one thread (one core), ${tiles.length} tiles in turn, ${SECONDS} s per direction after a warm-up round\n`);
  const rows = [['direction', 'tiles/s (wall)', 'tiles/CPU-s', 'MB/CPU-s in', 'CPU ms/tile', 'decode', 'encode', 'vs martin MVT->MLT']];
  const runs = [
    { label: 'MVT -> MLT (compact)', from: 'mvt' as const, encode: encodeMlt },
    { label: 'MVT -> MLT (plain, before)', from: 'mvt' as const, encode: encodeMltPlain },
    { label: 'MLT -> MVT', from: 'mlt' as const, encode: encodeMlt },
  ];
  for (const { label, from, encode } of runs) {
    loop(tiles, from, 0.001, encode);
    const r = loop(tiles, from, SECONDS, encode);
    const total = r.decodeMs + r.encodeMs;
    const perCpuS = (r.tiles * 1000) / r.cpuMs;
    rows.push([
      label,
      fmt((r.tiles * 1000) / total, 1),
      fmt(perCpuS, 1),
      fmt((r.bytes / 1e6) * (1000 / r.cpuMs), 1),
      fmt(r.cpuMs / r.tiles, 1),
      `${fmt((100 * r.decodeMs) / total)} %`,
      `${fmt((100 * r.encodeMs) / total)} %`,
      from === 'mvt' ? `1/${fmt(MARTIN_TILES_PER_S / perCpuS)}` : '',
    ]);
  }
  process.stdout.write(table(rows) + '\n');
  const paris = tiles.find((t) => t.name === '14_8298_10748');
  if (paris) {
    const mlt = encodeMlt(decodeMvt(paris.mvt));
    process.stdout.write(
      `  Paris tile (${paris.name}): MVT ${fmt(paris.mvt.length / 1024)} KiB -> our MLT ${fmt(mlt.length / 1024)} KiB ` +
        `(reference encoder ${fmt(paris.mlt.length / 1024)} KiB; gzip ${fmt(gzipSync(mlt).length / 1024)} vs ${fmt(gzipSync(paris.mlt).length / 1024)} KiB)\n`,
    );
  }
}

/** The part of the pipeline a profiled function belongs to. */
function areaOf(url: string, fn: string): string {
  if (fn === '(garbage collector)') return 'garbage collection';
  if (url === 'node:internal/encoding' || fn === 'encodeUtf8String' || fn === 'decodeUTF8') return 'UTF-8 (TextEncoder / TextDecoder: string columns, both ways)';
  if (url.includes('@maplibre/mlt/dist/encoding/fsst')) return '@maplibre/mlt FSST coder (encodeFsst)';
  if (url.includes('@maplibre/mlt/dist/encoding')) return '@maplibre/mlt stream encoders';
  if (url.includes('fsst-table')) return 'FSST symbol table learning (src/tiles/mlt/fsst-table.ts)';
  if (url.includes('/tiles/mlt/')) return 'compact MLT encoder: choosing encodings (src/tiles/mlt/)';
  if (url.includes('@maplibre/mlt') || url.includes('point-geometry')) return '@maplibre/mlt decoder (decodeTile, getFeatures)';
  if (url.includes('mvt-decode')) return 'MVT decoding (src/tiles/mvt-decode.ts)';
  if (url.includes('mvt-encode')) return 'MVT encoding (src/tiles/mvt-encode.ts)';
  if (url.includes('mlt-codec') || url.includes('vector-model')) return 'model <-> MLT library shapes (src/tiles/mlt-codec.ts)';
  if (url.includes('/pbf/')) return 'pbf reader / writer';
  return 'other (runtime, bench loop)';
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

/** Where the time goes: a profiled child runs one direction's loop; self time summed by function and by area. */
function profile(from: 'mvt' | 'mlt'): void {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'transcode-prof-'));
  const r = spawnSync(process.execPath, ['--import', 'tsx', '--cpu-prof', '--cpu-prof-dir', dir, path.join(ROOT, 'bench/transcode.bench.ts'), `--profile-child=${from}`], {
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
    env: { ...process.env, BENCH_PROFILE_SECONDS: String(PROFILE_SECONDS) },
  });
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  const marker = /LOOP_START_MS=([\d.]+)/.exec(r.stdout ?? '');
  if (r.status !== 0 || !file || !marker) throw new Error(`the profiled run failed: ${r.stdout}`);
  const prof = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] };
  // Only the samples of the measured loop: start-up (loading tsx, compiling) and the warm-up round come first.
  const loopStartUs = Number(marker[1]) * 1000;
  const hitsOf = new Map<number, number>();
  let t = 0;
  prof.samples.forEach((id, i) => {
    t += prof.timeDeltas[i];
    if (t >= loopStartUs) hitsOf.set(id, (hitsOf.get(id) ?? 0) + 1);
  });
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  let total = 0;
  for (const n of prof.nodes) {
    const hits = hitsOf.get(n.id) ?? 0;
    if (!hits || n.callFrame.functionName === '(idle)' || n.callFrame.functionName === '(program)') continue;
    total += hits;
    const url = n.callFrame.url;
    const where = url.includes('@maplibre/mlt') ? url.slice(url.indexOf('@maplibre/mlt') + 14) : path.basename(url || '(native)');
    const fn = `${n.callFrame.functionName || '(anonymous)'} ${where}`;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + hits);
    const area = areaOf(url, n.callFrame.functionName);
    byArea.set(area, (byArea.get(area) ?? 0) + hits);
  }
  const pct = (h: number) => `${fmt((100 * h) / total, 1)} %`;
  process.stdout.write(`\n2${from === 'mvt' ? 'a' : 'b'}. ${from === 'mvt' ? 'MVT -> MLT' : 'MLT -> MVT'} profile (--cpu-prof, ${PROFILE_SECONDS} s), share of CPU samples\n`);
  process.stdout.write(table([['area', 'share'], ...[...byArea].sort((a, b) => b[1] - a[1]).map(([k, h]) => [k, pct(h)])]) + '\n');
  const top = [...byFunction].sort((a, b) => b[1] - a[1]).slice(0, 12);
  process.stdout.write(table([['function (self time)', 'share'], ...top.map(([k, h]) => [k, pct(h)])]) + '\n');
}

function buildArchive(tiles: Pair[], dir: string): string {
  const file = path.join(dir, 'omt-mvt.pmtiles');
  writeFileSync(
    file,
    buildPmtiles(
      tiles.map((t) => ({ z: t.z, x: t.x, y: t.y, data: gzipSync(t.mvt) })),
      {
        tileType: TileType.Mvt,
        tileCompression: Compression.Gzip,
        bounds: [-180, -85.0511287798066, 180, 85.0511287798066],
        center: [2.35, 48.85, 14],
        metadata: { name: 'omt fixture tiles' },
      },
    ),
  );
  return file;
}

const load = (base: string, paths: string[], duration: number) =>
  cycleLoad(base, paths, { connections: CONNECTIONS, duration, timeout: 60, headers: HEADERS });

async function serving(tiles: Pair[]): Promise<void> {
  if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: build first (node scripts/build.mjs, or make bench)');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'transcode-bench-'));
  const archive = buildArchive(tiles, dir);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const config = path.join(dir, 'config.toml');
  writeFileSync(config, `[server]\nhost = "127.0.0.1"\nport = ${port}\n\n[cache]\nenabled = false\n\n[[sources]]\nid = "omt"\ntype = "pmtiles"\npath = ${JSON.stringify(archive)}\n`);
  process.stdout.write(
    `\n3. served by tileserver-ts (default workers and vector pool, tile cache OFF), ${CONNECTIONS} connections, ${DURATION} s per run after ${WARMUP} s of warm-up,\n` +
      `   the ${tiles.length} tiles in turn, Accept-Encoding: ${HEADERS['accept-encoding']}\n`,
  );
  const server = ChildServer.start('tileserver-ts', process.execPath, [...NODE_ARGS, CLI, '--config', config], { env: { LOG_LEVEL: 'warn' } });
  try {
    await server.waitReady(`${base}/data/omt.json`);
    const rows = [['request', 'req/s', 'tiles/s per core', 'p50', 'p99', 'non-2xx/errors', 'CPU/req']];
    const results: number[] = [];
    for (const ext of ['pbf', 'mlt']) {
      const paths = tiles.map((t) => `/data/omt/${t.z}/${t.x}/${t.y}.${ext}`);
      for (const p of paths) {
        const r = await httpGet(base + p, HEADERS, 60_000);
        const want = ext === 'mlt' ? 'application/vnd.open-vector-tile' : 'application/x-protobuf';
        if (r.status !== 200 || r.headers['content-type'] !== want) throw new Error(`${p}: ${r.status} ${r.headers['content-type']}`);
      }
      await load(base, paths, WARMUP);
      const cpu0 = server.cpuSeconds();
      const res = await load(base, paths, DURATION);
      const cpu1 = server.cpuSeconds();
      if (!server.alive) throw new Error(`the server died during .${ext}:\n${server.output()}`);
      const cpuPerReq = cpu0 !== undefined && cpu1 !== undefined ? ((cpu1 - cpu0) * 1000) / Math.max(1, res.requests.total) : undefined;
      results.push(res.requests.average);
      rows.push([
        `.${ext}${ext === 'mlt' ? ' (transcoded)' : ' (stored)'}`,
        fmt(res.requests.average, 1),
        fmt(res.requests.average / cores(), 1),
        `${fmt(res.latency.p50)} ms`,
        `${fmt(res.latency.p99)} ms`,
        String(res.non2xx + res.errors + res.timeouts),
        cpuPerReq === undefined ? 'n/a' : `${fmt(cpuPerReq, 1)} ms`,
      ]);
    }
    process.stdout.write(table(rows) + '\n');
    process.stdout.write(`  .mlt (transcoded) / .pbf (stored): ${fmt(results[1] / results[0], 4)}x\n`);
  } finally {
    await server.stop();
  }
}

/** All CPUs' [steal, total] ticks from /proc/stat (Linux; zeros elsewhere). */
function cpuTicks(): [number, number] {
  try {
    const line = readFileSync('/proc/stat', 'utf8').split('\n')[0];
    const f = line.trim().split(/\s+/).slice(1, 9).map(Number);
    return [f[7] ?? 0, f.reduce((a, b) => a + b, 0)];
  } catch {
    return [0, 0];
  }
}

function addTicks(sum: { steal: number; total: number }, a: [number, number], b: [number, number]): void {
  sum.steal += b[0] - a[0];
  sum.total += b[1] - a[1];
}

/** Steal as a share of all CPU time: time a virtual machine's CPUs were runnable but the host ran something else. */
const stealShare = (t: { steal: number; total: number }) => (t.total > 0 ? `${fmt((100 * t.steal) / t.total, 2)} %` : 'n/a');

/**
 * (4) The issue's bound on interference: the p99 of a small cached tile (the `.mlt` of the smallest fixture tile,
 * transcoded once and then served from the tile cache) alone, and while the densest tile is transcoded over and
 * over (stored at many coordinates, so that every request is a new transcode the cache cannot answer).
 */
async function interference(tiles: Pair[]): Promise<void> {
  const small = tiles.reduce((a, b) => (b.mvt.length < a.mvt.length ? b : a));
  const dense = tiles.reduce((a, b) => (b.mvt.length > a.mvt.length ? b : a));
  // Enough copies that no dense request of the whole part repeats one: every dense loop starts where the last one
  // stopped, so none is answered from the tile cache (a cached 1 MB answer is not a transcode). The archive stores
  // the bytes once (the writer shares identical tiles).
  const COPIES = 16_384;
  let nextCopy = 0;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'transcode-interference-'));
  const archive = path.join(dir, 'mixed.pmtiles');
  const denseGz = gzipSync(dense.mvt);
  writeFileSync(
    archive,
    buildPmtiles(
      [{ z: small.z, x: small.x, y: small.y, data: gzipSync(small.mvt) }, ...Array.from({ length: COPIES }, (_, i) => ({ z: 14, x: i, y: 0, data: denseGz }))],
      { tileType: TileType.Mvt, tileCompression: Compression.Gzip, bounds: [-180, -85.0511287798066, 180, 85.0511287798066], center: [0, 0, 0], metadata: { name: 'interference' } },
    ),
  );
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const config = path.join(dir, 'config.toml');
  writeFileSync(config, `[server]\nhost = "127.0.0.1"\nport = ${port}\n\n[[sources]]\nid = "mix"\ntype = "pmtiles"\npath = ${JSON.stringify(archive)}\n`);
  const server = ChildServer.start('tileserver-ts', process.execPath, [...NODE_ARGS, CLI, '--config', config], { env: { LOG_LEVEL: 'warn' } });
  try {
    await server.waitReady(`${base}/data/mix.json`);
    const smallPath = `/data/mix/${small.z}/${small.x}/${small.y}.mlt`;
    if ((await httpGet(base + smallPath, HEADERS, 60_000)).status !== 200) throw new Error(`${smallPath} failed`);
    // The densest tile transcoded back to back by a client in its own process, so that handling its large answers
    // never delays the probe's own timers and sockets.
    const denseLoop = () => {
      const start = nextCopy;
      const script = `import http from 'node:http';
        const agent = new http.Agent({ keepAlive: true });
        let done = 0;
        process.on('SIGTERM', () => { process.stdout.write(String(done)); process.exit(0); });
        for (let i = ${start}; ; i = (i + 1) % ${COPIES}) {
          const status = await new Promise((resolve, reject) => http.get('${base}/data/mix/14/' + i + '/0.mlt', { agent, headers: ${JSON.stringify(HEADERS)} }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); }).on('error', reject));
          if (status !== 200) { process.stderr.write('dense transcode: ' + status); process.exit(1); }
          done++;
        }`;
      // At nice 10: it stands for a client on another machine, whose own CPU the server's machine would not pay.
      const child = spawn('nice', ['-n', '10', process.execPath, '--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      let out = '';
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      const exited = new Promise<number>((resolve) =>
        child.on('exit', () => {
          const done = Number(out) || 0;
          // The request in flight when the client stopped may have been transcoded and cached: skip it too.
          nextCopy = (start + done + 1) % COPIES;
          resolve(done);
        }),
      );
      return { stop: () => (child.kill('SIGTERM'), exited) };
    };
    // The machine's own floor: one core kept busy by a process that has nothing to do with the server, at the dense
    // client's nice 10: a spin loop (computing only) and a loop copying 64 MB buffers (streaming memory, as a
    // transcode with its garbage does). On this 2-vCPU machine either lifts the small tile's p99 by itself, so a
    // transcode, which must take a core, is judged against them as well as against an idle machine.
    const busyCore = (work: string) => {
      const child = spawn('nice', ['-n', '10', process.execPath, '-e', work], { stdio: 'ignore' });
      const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
      return { stop: () => (child.kill('SIGKILL'), exited) };
    };
    const SPIN = 'for (;;) {}';
    const COPY = 'const a = Buffer.alloc(64 << 20), b = Buffer.alloc(64 << 20); for (;;) { a.copy(b); b.fill(7); }';
    const openWithBusyCore = async (work: string) => {
      const busy = busyCore(work);
      await new Promise((r) => setTimeout(r, 1000));
      const result = await openLoop(base, smallPath, { rate: RATE, seconds: DURATION, headers: HEADERS });
      await busy.stop();
      return result;
    };
    // (a) The issue's bound, as a user feels it: an open loop at a steady rate with room to spare on the machine.
    const RATE = 200;
    await openLoop(base, smallPath, { rate: RATE, seconds: WARMUP, headers: HEADERS });
    const openAlone = await openLoop(base, smallPath, { rate: RATE, seconds: DURATION, headers: HEADERS });
    const openSpin = await openWithBusyCore(SPIN);
    const openCopy = await openWithBusyCore(COPY);
    let dense1 = denseLoop();
    await new Promise((r) => setTimeout(r, 1000));
    const openDuring = await openLoop(base, smallPath, { rate: RATE, seconds: DURATION, headers: HEADERS });
    const openTranscodes = await dense1.stop();
    // (a') The same comparison interleaved: short windows alone and during transcodes, alternated (ABBA) so that a
    // drift of the machine over the run (other tenants of the host, a slow minute) lands on both sides, and the
    // answers of each side pooled into one distribution. Single 10 s windows in sequence differ by up to 2x on
    // this 2-vCPU machine when nothing changes between them. Run twice: with the probe at the server's priority,
    // and with the probe's thread at nice -10, standing for a user on another machine: on two cores, a probe that
    // waits for a core of its own adds that wait to every answer it times, and a transcode taking one core makes
    // it wait more (the load generator as a bottleneck).
    const interleaved = async (probeNice: number) => {
      const rounds = envNumber('BENCH_INTERLEAVE_ROUNDS', 8);
      const windowSeconds = envNumber('BENCH_INTERLEAVE_SECONDS', 4);
      const pooledAlone: number[] = [];
      const pooledDuring: number[] = [];
      const stealAlone = { steal: 0, total: 0 };
      const stealDuring = { steal: 0, total: 0 };
      const roundRatios: number[] = [];
      let transcodes = 0;
      const windowAlone = async () => {
        const t0 = cpuTicks();
        const r = await openLoop(base, smallPath, { rate: RATE, seconds: windowSeconds, headers: HEADERS });
        addTicks(stealAlone, t0, cpuTicks());
        pooledAlone.push(...r.times);
        return r.p99;
      };
      const windowDuring = async () => {
        // The dense client starts from nice 0 (it renices itself to 10), whatever the probe's priority.
        os.setPriority(0, 0);
        const dense = denseLoop();
        os.setPriority(0, probeNice);
        await new Promise((r) => setTimeout(r, 1000));
        const t0 = cpuTicks();
        const r = await openLoop(base, smallPath, { rate: RATE, seconds: windowSeconds, headers: HEADERS });
        addTicks(stealDuring, t0, cpuTicks());
        transcodes += await dense.stop();
        // The transcode in flight when the client stopped finishes before the next window.
        await new Promise((r) => setTimeout(r, 1000));
        pooledDuring.push(...r.times);
        return r.p99;
      };
      // os.setPriority(0, n) sets the nice value of the calling thread only (Linux): the probe's event loop.
      os.setPriority(0, probeNice);
      try {
        for (let i = 0; i < rounds; i++) {
          const first = i % 2 === 0 ? await windowAlone() : await windowDuring();
          const second = i % 2 === 0 ? await windowDuring() : await windowAlone();
          roundRatios.push(i % 2 === 0 ? second / Math.max(0.001, first) : first / Math.max(0.001, second));
        }
      } finally {
        os.setPriority(0, 0);
      }
      return { probeNice, rounds, windowSeconds, pooledAlone, pooledDuring, roundRatios, transcodes, stealAlone, stealDuring };
    };
    const interleavedRuns = [await interleaved(0), await interleaved(-10)];
    const quantile = (xs: number[], p: number) => {
      const sorted = [...xs].sort((a, b) => a - b);
      return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
    };
    // (b) A closed loop at full speed (4 connections): the two cores are saturated by the small tiles alone, so any
    // CPU a transcode takes lengthens their queue; shown for comparison with earlier runs.
    const connections = 4;
    await cycleLoad(base, [smallPath], { connections, duration: WARMUP, timeout: 60, headers: HEADERS });
    const alone = await cycleLoad(base, [smallPath], { connections, duration: DURATION, timeout: 60, headers: HEADERS });
    dense1 = denseLoop();
    await new Promise((r) => setTimeout(r, 1000));
    const during = await cycleLoad(base, [smallPath], { connections, duration: DURATION, timeout: 60, headers: HEADERS });
    const transcodes = await dense1.stop();
    process.stdout.write(
      `\n4. p99 of a small cached tile (${smallPath}, ${DURATION} s) alone and while ${dense.z}/${dense.x}/${dense.y} (${fmt(dense.mvt.length / 1024)} KiB MVT) is transcoded back to back by another client\n`,
    );
    const ms = (v: number) => `${fmt(v, 2)} ms`;
    process.stdout.write(
      table([
        ['load on the small tile', 'run', 'req/s', 'p50', 'p99', 'max', 'errors', 'dense transcodes'],
        [`open loop, ${RATE}/s`, 'alone', fmt(RATE), ms(openAlone.p50), ms(openAlone.p99), ms(openAlone.max), String(openAlone.errors), '0'],
        [`open loop, ${RATE}/s`, 'one core spinning', fmt(RATE), ms(openSpin.p50), ms(openSpin.p99), ms(openSpin.max), String(openSpin.errors), '0'],
        [`open loop, ${RATE}/s`, 'one core copying memory', fmt(RATE), ms(openCopy.p50), ms(openCopy.p99), ms(openCopy.max), String(openCopy.errors), '0'],
        [`open loop, ${RATE}/s`, 'during transcodes', fmt(RATE), ms(openDuring.p50), ms(openDuring.p99), ms(openDuring.max), String(openDuring.errors), String(openTranscodes)],
        [`closed loop, ${connections} conn.`, 'alone', fmt(alone.requests.average, 1), `${fmt(alone.latency.p50, 1)} ms`, `${fmt(alone.latency.p99, 1)} ms`, `${fmt(alone.latency.max, 1)} ms`, String(alone.non2xx + alone.errors), '0'],
        [`closed loop, ${connections} conn.`, 'during transcodes', fmt(during.requests.average, 1), `${fmt(during.latency.p50, 1)} ms`, `${fmt(during.latency.p99, 1)} ms`, `${fmt(during.latency.max, 1)} ms`, String(during.non2xx + during.errors), String(transcodes)],
      ]) + '\n',
    );
    process.stdout.write(`  open loop: p99 during / alone ${fmt(openDuring.p99 / Math.max(0.001, openAlone.p99), 2)}x (the bound: 2x)\n`);
    const ratio = (a: number, b: number) => `${fmt(a / Math.max(0.001, b), 2)}x`;
    process.stdout.write(
      `  open loop, no server work on the busy core: p99 spinning / alone ${ratio(openSpin.p99, openAlone.p99)}, copying memory / alone ${ratio(openCopy.p99, openAlone.p99)}; during transcodes / copying memory ${ratio(openDuring.p99, openCopy.p99)}\n`,
    );
    for (const run of interleavedRuns) {
      const a99 = quantile(run.pooledAlone, 0.99);
      const d99 = quantile(run.pooledDuring, 0.99);
      process.stdout.write(
        `  interleaved, probe at nice ${run.probeNice}, ${run.rounds} rounds of ${run.windowSeconds} s windows at ${RATE}/s (ABBA): pooled p50 alone ${ms(quantile(run.pooledAlone, 0.5))}, during ${ms(quantile(run.pooledDuring, 0.5))}; ` +
          `pooled p99 alone ${ms(a99)}, during ${ms(d99)}: during / alone ${ratio(d99, a99)} (the bound: 2x); ${run.transcodes} dense transcodes\n` +
          `    per round: ${run.roundRatios.map((r) => `${fmt(r, 2)}x`).join(' ')} (median ${fmt(quantile(run.roundRatios, 0.5), 2)}x); ` +
          `CPU time the hypervisor took from this machine (steal): alone ${stealShare(run.stealAlone)}, during ${stealShare(run.stealDuring)}\n`,
      );
    }
    process.stdout.write(`  closed loop at saturation: p99 during / alone ${fmt(during.latency.p99 / Math.max(0.001, alone.latency.p99), 2)}x (whole milliseconds)\n`);
  } finally {
    await server.stop();
  }
}

async function main(): Promise<void> {
  const tiles = pairs();
  const child = process.argv.find((a) => a.startsWith('--profile-child='));
  if (child) {
    const from = child.endsWith('mlt') ? 'mlt' : 'mvt';
    loop(tiles, from, 0.001);
    // performance.now() counts from process start, as the profile's sample times do (near enough).
    process.stdout.write(`LOOP_START_MS=${performance.now()}\n`);
    loop(tiles, from, PROFILE_SECONDS);
    return;
  }
  process.stdout.write(
    `MVT <-> MLT transcoding: node ${process.version}, ${cores()} cores, @maplibre/mlt ${(JSON.parse(readFileSync(path.join(ROOT, 'node_modules/@maplibre/mlt/package.json'), 'utf8')) as { version: string }).version}, ` +
      `fixtures/vector/omt-tiles (${tiles.length} tiles, ${fmt(tiles.reduce((n, t) => n + t.mvt.length, 0) / 1e6, 1)} MB of MVT)\n`,
  );
  const parts = new Set((process.env.BENCH_TRANSCODE_PARTS ?? '0,1,2,3,4').split(','));
  if (parts.has('0')) sizes(tiles);
  if (parts.has('1')) throughput(tiles);
  if (parts.has('2') && PROFILE_SECONDS > 0) for (const from of ['mvt', 'mlt'] as const) profile(from);
  if (parts.has('3')) await serving(tiles);
  if (parts.has('4')) await interference(tiles);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
