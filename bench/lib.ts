// Helpers shared by the benchmarks: free ports, child servers started in their own process group and stopped
// with everything they forked, readiness polling, plain HTTP GETs, number formatting and tables.
import autocannon, { type AutocannonClient, type AutocannonResult } from 'autocannon';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

// The peer of the tile benchmarks (and the other reader of the seed bench's archives): tileserver-gl-light, at the
// version bench/peer/package.json pins, installed apart from the project. Its sqlite3 is a native module built for
// one Node ABI, so on a Node of `make bench NODE=24` (.node/24/bin/node) it is installed beside that Node, in
// .node/24/peer, and bench/peer/node_modules stays the machine Node's.
const PEER_SOURCE = path.join(ROOT, 'bench/peer');
const NODE_OF_MAKE = path.relative(path.join(ROOT, '.node'), process.execPath).split(path.sep);
const PEER_DIR = NODE_OF_MAKE.length === 3 && NODE_OF_MAKE[0] !== '..' ? path.join(ROOT, '.node', NODE_OF_MAKE[0], 'peer') : PEER_SOURCE;
const PEER_PKG = path.join(PEER_DIR, 'node_modules/tileserver-gl-light/package.json');
export const PEER_MAIN = path.join(PEER_DIR, 'node_modules/tileserver-gl-light/src/main.js');
export const PEER_VERSION = (JSON.parse(readFileSync(path.join(PEER_SOURCE, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies[
  'tileserver-gl-light'
];

/** Installs the peer into PEER_DIR on first use (npm builds its sqlite3 dependency from source, a few minutes). */
export function ensurePeer(): void {
  if (existsSync(PEER_PKG)) {
    const installed = (JSON.parse(readFileSync(PEER_PKG, 'utf8')) as { version: string }).version;
    if (installed === PEER_VERSION) return;
  }
  const where = path.relative(ROOT, PEER_DIR);
  process.stdout.write(`installing tileserver-gl-light ${PEER_VERSION} into ${where} (first run only)...\n`);
  if (PEER_DIR !== PEER_SOURCE) {
    mkdirSync(PEER_DIR, { recursive: true });
    for (const f of ['package.json', 'package-lock.json']) copyFileSync(path.join(PEER_SOURCE, f), path.join(PEER_DIR, f));
  }
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const r = spawnSync(npm, ['install', '--prefix', PEER_DIR, '--no-audit', '--no-fund', '--no-save'], { stdio: 'inherit', cwd: ROOT });
  if (r.status !== 0 || !existsSync(PEER_MAIN)) throw new Error(`npm install --prefix ${where} failed (exit ${r.status})`);
  const sqlite = spawnSync(process.execPath, ['-e', "require('sqlite3')"], { cwd: path.join(PEER_DIR, 'node_modules/@mapbox/mbtiles'), encoding: 'utf8' });
  if (sqlite.status !== 0) {
    throw new Error(`the peer's sqlite3 module did not build (tileserver-gl-light imports it even for PMTiles):\n${sqlite.stderr}`);
  }
}


/** The cores of a taskset CPU list such as "0", "0,1" or "0-3" (BENCH_CPUS, BENCH_SEED_CPUS). */
export function cpuListSize(list: string): number {
  return list.split(',').reduce((n, part) => n + (part.includes('-') ? Number(part.split('-')[1]) - Number(part.split('-')[0]) + 1 : 1), 0);
}

export function cores(): number {
  return Math.max(1, typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length);
}

/** A positive number from the environment, or the default. */
export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name}: expected a positive number, got "${raw}"`);
  return n;
}

/** The same free-port probe the tests use. */
export { freePort } from '../test/helpers/server.js';

export interface CycleLoad {
  connections: number;
  /** Seconds. */
  duration: number;
  /** Seconds a request may take before autocannon counts it as an error. */
  timeout: number;
  headers: Record<string, string>;
}

/**
 * autocannon GETs over `paths`: connection i starts at its own offset in the list and cycles through it, so
 * the connections spread over the whole list instead of marching through it in step.
 */
export function cycleLoad(base: string, paths: string[], o: CycleLoad): Promise<AutocannonResult> {
  const requests = paths.map((p) => ({ method: 'GET', path: p }));
  let client = 0;
  return Promise.resolve(
    autocannon({
      url: base,
      connections: o.connections,
      duration: o.duration,
      timeout: o.timeout,
      headers: o.headers,
      requests: [requests[0]],
      setupClient(c: AutocannonClient) {
        const start = Math.floor((client++ * requests.length) / o.connections) % requests.length;
        c.setRequests([...requests.slice(start), ...requests.slice(0, start)]);
      },
    }),
  );
}

export interface HttpResult {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** One GET on a fresh connection (no agent pooling surprises), with the given headers. */
export function httpGet(url: string, headers: Record<string, string> = {}, timeoutMs = 10_000): Promise<HttpResult> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers, agent: false, timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timed out`)));
    req.on('error', reject);
  });
}

export interface OpenLoopResult {
  sent: number;
  /** Non-200 answers and failed requests. */
  errors: number;
  /** Milliseconds from each request's scheduled start to the end of its answer. */
  p50: number;
  p99: number;
  max: number;
  /** Every answer's milliseconds, sorted (to pool several windows into one distribution). */
  times: number[];
}

/**
 * An open-loop probe: GETs `path` at a fixed rate for `seconds`, whatever the answers do, on keep-alive connections
 * (as a map client's would be), and times each from its scheduled start to the last byte of its answer, so a
 * late start (a stalled event loop here or a full connection) counts against the server as a user would feel it.
 * Unlike a closed loop at full speed, the rate leaves the machine room: a rise in latency shows a stall, not the
 * queue of a saturated loop.
 */
export async function openLoop(base: string, route: string, o: { rate: number; seconds: number; headers: Record<string, string> }): Promise<OpenLoopResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const url = new URL(route, base);
  const interval = 1000 / o.rate;
  const total = Math.round(o.rate * o.seconds);
  const times: number[] = [];
  let errors = 0;
  const one = (scheduled: number) =>
    new Promise<void>((resolve) => {
      const req = http.get(url, { agent, headers: o.headers, timeout: 30_000 }, (res) => {
        res.resume();
        res.on('end', () => {
          if (res.statusCode !== 200) errors++;
          times.push(performance.now() - scheduled);
          resolve();
        });
        res.on('error', () => {
          errors++;
          resolve();
        });
      });
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', () => {
        errors++;
        resolve();
      });
    });
  const start = performance.now() + 5;
  const pending: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const at = start + i * interval;
    const wait = at - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    // Sent late (this process was busy): timed from when it should have gone. Sent up to 1 ms early: from now.
    pending.push(one(Math.min(at, performance.now())));
  }
  await Promise.all(pending);
  agent.destroy();
  times.sort((a, b) => a - b);
  const q = (p: number) => times[Math.min(times.length - 1, Math.floor(p * times.length))] ?? NaN;
  return { sent: total, errors, p50: q(0.5), p99: q(0.99), max: times[times.length - 1] ?? NaN, times };
}

const running = new Set<ChildServer>();
let hooked = false;

/** Stops every child server still running when the benchmark exits or is interrupted. */
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  const killAll = () => {
    for (const s of running) s.killGroup('SIGKILL');
  };
  process.on('exit', killAll);
  for (const sig of ['SIGINT', 'SIGTERM'] as const) {
    process.on(sig, () => {
      killAll();
      process.exit(130);
    });
  }
}

/** A server process started by a benchmark, in its own process group so that its workers go with it. */
export class ChildServer {
  private out = '';
  private exited: Promise<number | null>;

  private constructor(
    readonly name: string,
    readonly proc: ChildProcess,
  ) {
    proc.stdout?.on('data', (c: Buffer) => this.append(c));
    proc.stderr?.on('data', (c: Buffer) => this.append(c));
    this.exited = new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
  }

  static start(name: string, command: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): ChildServer {
    hookExit();
    const proc = spawn(command, args, {
      cwd: opts.cwd ?? ROOT,
      env: { ...process.env, ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const server = new ChildServer(name, proc);
    running.add(server);
    return server;
  }

  private append(c: Buffer): void {
    // Keep the tail only: enough to explain a failure without growing for the whole run.
    this.out = (this.out + c.toString()).slice(-20_000);
  }

  output(): string {
    return this.out;
  }

  /** CPU seconds used so far by the server and every process it forked (see groupCpuSeconds). */
  cpuSeconds(): number | undefined {
    return this.proc.pid === undefined ? undefined : groupCpuSeconds(this.proc.pid);
  }

  /** Resident memory of the server and every process it forked, in bytes (see groupRssBytes). */
  rssBytes(): number | undefined {
    return this.proc.pid === undefined ? undefined : groupRssBytes(this.proc.pid);
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Polls `url` until it answers `okStatus`; fails early when the process exits. */
  async waitReady(url: string, headers: Record<string, string> = {}, timeoutMs = 60_000, okStatus = 200): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < deadline) {
      if (!this.alive) throw new Error(`${this.name} exited while starting:\n${this.out}`);
      try {
        const r = await httpGet(url, headers, 2_000);
        if (r.status === okStatus) return;
        last = `status ${r.status}`;
      } catch (err) {
        last = (err as Error).message;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`${this.name} did not answer ${url} within ${timeoutMs} ms (${last}):\n${this.out}`);
  }

  killGroup(signal: NodeJS.Signals): void {
    if (this.proc.pid === undefined) return;
    try {
      process.kill(-this.proc.pid, signal);
    } catch {
      // already gone
    }
  }

  /** SIGTERM to the whole group, SIGKILL after `graceMs`. */
  async stop(graceMs = 10_000): Promise<void> {
    if (this.alive) {
      this.killGroup('SIGTERM');
      const timer = setTimeout(() => this.killGroup('SIGKILL'), graceMs);
      await this.exited;
      clearTimeout(timer);
    }
    // Workers of a cluster may outlive their primary by a moment; make sure none stays.
    this.killGroup('SIGKILL');
    running.delete(this);
  }
}

let clockTicks: number | undefined;

/**
 * The /proc stat fields after the command name (which may hold spaces) of every live process of a process group:
 * state (0), ppid, pgrp (2), ... utime (11), stime (12), ... rss in pages (21).
 */
function groupStats(pgid: number): string[][] {
  return groupProcesses(pgid).map((p) => p.fields);
}

/** Each live process of a process group: its pid, command name and /proc stat fields after the name (Linux). */
function groupProcesses(pgid: number): { pid: number; comm: string; fields: string[] }[] {
  const out: { pid: number; comm: string; fields: string[] }[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(f[2]) === pgid) out.push({ pid: Number(entry), comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), fields: f });
  }
  return out;
}

/**
 * CPU seconds (user + system) used so far by every live process of a process group, from /proc (Linux).
 * On a machine shared with other work, CPU time per request is steadier than requests per second.
 */
export function groupCpuSeconds(pgid: number): number | undefined {
  if (process.platform !== 'linux') return undefined;
  clockTicks ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
  return groupStats(pgid).reduce((ticks, f) => ticks + Number(f[11]) + Number(f[12]), 0) / clockTicks;
}

/**
 * Resident memory (bytes) of each live process of a process group, from /proc (Linux), by pid, with what it is:
 * "primary" (the group's leader), "worker" (a node process it forked) or the command name of anything else.
 */
export function groupRssByProcess(pgid: number): Map<number, { kind: string; rss: number }> {
  const out = new Map<number, { kind: string; rss: number }>();
  if (process.platform !== 'linux') return out;
  for (const { pid, comm, fields: f } of groupProcesses(pgid)) {
    const kind = pid === pgid ? 'primary' : Number(f[1]) === pgid && comm.startsWith('node') ? 'worker' : comm;
    out.set(pid, { kind, rss: Number(f[21]) * 4096 });
  }
  return out;
}

/** Resident memory (bytes) of every live process of a process group, from /proc (Linux): `rss` pages of each. */
export function groupRssBytes(pgid: number): number | undefined {
  if (process.platform !== 'linux') return undefined;
  return groupStats(pgid).reduce((pages, f) => pages + Number(f[21]), 0) * 4096;
}

export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** A plain-text table: the first row is the header; numeric-looking cells are right-aligned. */
export function table(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const numeric = /^[-+]?[\d,.]+(x| ms| us)?$/;
  const line = (r: string[]) =>
    r
      .map((cell, i) => (numeric.test(cell) ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  return [line(rows[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on Linux). */
const CLK = 100;

/** A /proc stat line's fields after the command name (which may hold spaces and parentheses). */
const statFields = (stat: string) => stat.slice(stat.lastIndexOf(')') + 2).split(' ');

/** CPU seconds (user + system) of a /proc stat line. */
export const statCpu = (stat: string) => {
  const f = statFields(stat);
  return (Number(f[11]) + Number(f[12])) / CLK;
};

/**
 * Every process descended from `root`, root included, with its stat line. Browsers are in their own process
 * groups, so a walk of the parent links finds them where a group walk would not.
 */
export function processTree(root: number): Map<number, string> {
  const parent = new Map<number, number>();
  const stats = new Map<number, string>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const st = readFileSync(`/proc/${e}/stat`, 'utf8');
      parent.set(Number(e), Number(statFields(st)[1]));
      stats.set(Number(e), st);
    } catch {
      /* gone */
    }
  }
  const out = new Map<number, string>();
  for (const [pid, st] of stats) {
    let p = pid;
    for (let i = 0; p > 1 && p !== root && i < 64; i++) p = parent.get(p) ?? 0;
    if (p === root) out.set(pid, st);
  }
  return out;
}

/** CPU seconds of every thread under `root`, keyed "process kind/thread name" (digits folded), for BENCH_RENDER_THREADS=1. */
export function threadCpu(root: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const pid of processTree(root).keys()) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      const kind = /--type=([a-z-]+)/.exec(cmd)?.[1] ?? (cmd.includes('chromium') ? 'browser' : 'node');
      for (const t of readdirSync(`/proc/${pid}/task`)) {
        const st = readFileSync(`/proc/${pid}/task/${t}/stat`, 'utf8');
        const key = `${kind}/${st.slice(st.indexOf('(') + 1, st.lastIndexOf(')')).replace(/\d+/g, '#')}`;
        out.set(key, (out.get(key) ?? 0) + statCpu(st));
      }
    } catch {
      /* gone */
    }
  }
  return out;
}

/** Machine-wide CPU time counters from /proc/stat (jiffies): total and the part stolen by the hypervisor. */
export function cpuTimes(): { total: number; steal: number } {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal (guest time is already inside user)
  return { total: f.slice(0, 8).reduce((a, b) => a + b, 0), steal: f[7] ?? 0 };
}

/**
 * Busy CPU seconds of the whole machine so far, from /proc/stat: user, nice, system, irq and softirq of every core
 * (not idle, iowait or steal). Counts processes whatever became of their parents: Chromium's are not all reaped by
 * theirs, so a process tree's rusage misses some; on a shared machine it counts the neighbours too.
 */
export function machineBusySeconds(): number {
  const f = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return (f[0] + f[1] + f[2] + (f[5] ?? 0) + (f[6] ?? 0)) / CLK;
}

/** Share of the machine's CPU time the hypervisor took between two readings (a noisy neighbour's mark). */
export const stealShare = (a: { total: number; steal: number }, b: { total: number; steal: number }) => (b.steal - a.steal) / Math.max(1, b.total - a.total);

/** Proportional set size of a process tree: pages the processes share (Chromium's do) counted once across them. */
export function treePss(root: number): number {
  let total = 0;
  for (const pid of processTree(root).keys()) {
    try {
      const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
      if (m) total += Number(m[1]) * 1024;
    } catch {
      /* ended meanwhile */
    }
  }
  return total;
}

/** The "name;dur=12.3" entries of a rendered answer's Server-Timing; undefined for a cached answer ("cache;desc=…"). */
export function serverTimings(header: string | string[] | undefined): Record<string, number> | undefined {
  if (typeof header !== 'string' || header.startsWith('cache')) return undefined;
  const out: Record<string, number> = {};
  for (const part of header.split(',')) {
    const m = /^\s*([a-z]+);dur=([\d.]+)/.exec(part);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

/** What a process of a render host is, for cpuByKind: Chromium's process types, Node, and the rest. */
export type ProcessKind = 'renderer' | 'gpu' | 'network' | 'browser' | 'node' | 'other';
export const PROCESS_KINDS: readonly ProcessKind[] = ['renderer', 'gpu', 'browser', 'network', 'node', 'other'];

/** CPU seconds by kind of process, and their sum. */
export type CpuSplit = Record<ProcessKind, number> & { total: number };

/**
 * The kind of a process from /proc/<pid>/cmdline. Read afresh at every sample: a process Chromium's zygote forks
 * shows the zygote's command line until it rewrites its own, so a kind seen once may change. Chromium's child
 * processes rewrite theirs as one space-separated string (not NUL-separated arguments): both are split.
 */
function processKind(cmdline: string): ProcessKind {
  const args = cmdline.replace(/\0+$/, '').split(/[\0 ]/);
  const exe = path.basename(args[0] ?? '');
  const type = args.find((a) => a.startsWith('--type='))?.slice('--type='.length);
  if (type === 'renderer') return 'renderer';
  if (type === 'gpu-process') return 'gpu';
  if (type === 'utility' && args.includes('--utility-sub-type=network.mojom.NetworkService')) return 'network';
  if (type !== undefined) return 'other';
  if (exe === 'node' || args[0] === process.execPath) return 'node';
  if (/^(chromium|chrome|chromium-browser|google-chrome|headless_shell)$/.test(exe)) return 'browser';
  return 'other';
}

export interface CpuByKind {
  /** CPU used since the start, by kind, as of the latest sample (takes one now). */
  read(): CpuSplit;
  /** Takes a last sample, stops sampling and returns the CPU used since the start. */
  end(): CpuSplit;
}

/**
 * CPU seconds (utime + stime, as statCpu reads them) of the process tree under `root`, split by kind of process,
 * from now until `end()`. Processes come and go during a run (a page replaced, a browser recycled): the tree is
 * sampled every 500 ms and each process counts from its CPU at the start (0 for one born later) to the last sample
 * that saw it, so a process that exits mid-run is counted up to its last sample (up to 500 ms of it is lost).
 */
export function cpuByKind(root: number): CpuByKind {
  // Keyed by pid and start time (field 22 of stat), so a reused pid is a new process.
  const seen = new Map<string, { kind: ProcessKind; first: number; last: number }>();
  let started = false;
  const sample = () => {
    for (const [pid, st] of processTree(root)) {
      const key = `${pid}:${statFields(st)[19]}`;
      let cmdline = '';
      try {
        cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        continue; // ended meanwhile
      }
      const cpu = statCpu(st);
      const p = seen.get(key);
      // A process that has exited but is not yet reaped (Chromium leaves some so) has an empty command line: it
      // keeps the kind it was last seen as, else a renderer's whole CPU would move to "other" at its last sample.
      if (p) {
        if (cmdline !== '') p.kind = processKind(cmdline);
        p.last = cpu;
      } else seen.set(key, { kind: processKind(cmdline), first: started ? 0 : cpu, last: cpu });
    }
    started = true;
  };
  const split = (): CpuSplit => {
    const out = { renderer: 0, gpu: 0, network: 0, browser: 0, node: 0, other: 0, total: 0 };
    for (const p of seen.values()) {
      out[p.kind] += p.last - p.first;
      out.total += p.last - p.first;
    }
    return out;
  };
  sample();
  const timer = setInterval(sample, 500);
  // Sampling alone must not keep a bench's process alive.
  timer.unref();
  return {
    read() {
      sample();
      return split();
    },
    end() {
      clearInterval(timer);
      sample();
      return split();
    },
  };
}

/** Kernel CPU and memory faults of one kind of process over a span: what page faults and unmapping cost it. */
export interface KernelShare {
  /** CPU seconds in the kernel (stime). */
  system: number;
  /** CPU seconds in user space (utime). */
  user: number;
  /** Minor page faults (first touches of memory the process had given back, or never had). */
  faults: number;
}

/**
 * Kernel time and minor page faults of each kind of process under `root` from now until the returned function is
 * called, for the processes alive at both ends (a browser's stay for a floor pass). On a virtual machine a page
 * fault and the TLB shootdown of an unmapping cost far more than on bare metal, so this says how much of a
 * renderer's CPU is its allocators handing memory back and taking it again.
 */
export function kernelByKind(root: number): () => Map<ProcessKind, KernelShare> {
  const read = () => {
    const out = new Map<number, { kind: ProcessKind; f: string[] }>();
    for (const [pid, st] of processTree(root)) {
      try {
        out.set(pid, { kind: processKind(readFileSync(`/proc/${pid}/cmdline`, 'utf8')), f: statFields(st) });
      } catch {
        /* ended meanwhile */
      }
    }
    return out;
  };
  const start = read();
  return () => {
    const out = new Map<ProcessKind, KernelShare>();
    for (const [pid, { kind, f }] of read()) {
      const s = start.get(pid);
      if (!s || s.f[19] !== f[19]) continue; // born during the span, or a reused pid
      const k = out.get(kind) ?? { system: 0, user: 0, faults: 0 };
      k.user += (Number(f[11]) - Number(s.f[11])) / CLK;
      k.system += (Number(f[12]) - Number(s.f[12])) / CLK;
      k.faults += Number(f[7]) - Number(s.f[7]);
      out.set(kind, k);
    }
    return out;
  };
}

/** Share of the CPU outside the renderer and GPU processes (what a service adds around the drawing itself). */
export const outsideRendererGpu = (s: CpuSplit) => (s.total > 0 ? (s.total - s.renderer - s.gpu) / s.total : NaN);

/**
 * One line: "CPU by process: renderer 41.2 % (12.3 s), gpu 25.0 % (7.5 s), …; outside renderer+GPU 34 %".
 * Kinds with no CPU at all are left out.
 */
export function formatCpuSplit(s: CpuSplit): string {
  const parts = PROCESS_KINDS.filter((k) => s[k] > 0).map((k) => `${k} ${fmt((100 * s[k]) / s.total, 1)} % (${fmt(s[k], 1)} s)`);
  return `CPU by process: ${parts.join(', ') || 'none'}; total ${fmt(s.total, 1)} s; outside renderer+GPU ${fmt(100 * outsideRendererGpu(s), 1)} %`;
}

/** One run of wrk (C, an event loop per thread): cheaper per request than autocannon, which runs in Node. */
export interface WrkRun {
  rps: number;
  mbPerSec: number;
  p50Ms: number;
  p99Ms: number;
  /** Non-2xx answers and socket errors. */
  errors: number;
  /** CPU seconds wrk itself used (user + system): the load generator shares the cores. */
  wrkCpu: number;
  requests: number;
}

/** wrk's `--latency` figures: "50%  1.23ms". */
function wrkLatencyMs(out: string, pct: string): number {
  const m = new RegExp(`^\\s+${pct}%\\s+([\\d.]+)(us|ms|s)\\s*$`, 'm').exec(out);
  if (!m) return NaN;
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
}

function sizeMb(v: string, unit: string): number {
  const f: Record<string, number> = { B: 1e-6, KB: 1e-3, MB: 1, GB: 1e3 };
  return Number(v) * (f[unit] ?? NaN);
}

/**
 * One wrk run of the Lua script `script` (wrkPathList) against `base`; bash's `times` reports wrk's CPU time (the
 * children of the shell). Debian's wrk, which `make bench` installs.
 */
export function wrk(base: string, script: string, o: { threads: number; connections: number; seconds: number; headers: Record<string, string> }): WrkRun {
  const headers = Object.entries(o.headers).map(([k, v]) => `-H ${JSON.stringify(`${k}: ${v}`)}`).join(' ');
  const cmd = `wrk -t${o.threads} -c${o.connections} -d${o.seconds}s --latency -s "$1" ${headers} "$2"; times`;
  const r = spawnSync('bash', ['-c', cmd, 'bash', script, base], { encoding: 'utf8' });
  if (r.error) throw new Error(`wrk did not run (${r.error.message}); make bench installs Debian's wrk`);
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(r.stdout);
  const transfer = /Transfer\/sec:\s+([\d.]+)(B|KB|MB|GB)/.exec(r.stdout);
  const total = /(\d+) requests in/.exec(r.stdout);
  if (r.status !== 0 || !rps || !transfer || !total) throw new Error(`wrk failed:\n${r.stdout}${r.stderr}`);
  const non2xx = Number(/Non-2xx or 3xx responses: (\d+)/.exec(r.stdout)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(r.stdout);
  const socketErrors = socket ? socket.slice(1).reduce((n, v) => n + Number(v), 0) : 0;
  // `times` prints the shell's user/system times, then its children's: "0m1.234s 0m0.567s".
  const lines = r.stdout.trim().split('\n');
  const children = /^(\d+)m([\d.]+)s (\d+)m([\d.]+)s$/.exec(lines[lines.length - 1] ?? '');
  const wrkCpu = children ? Number(children[1]) * 60 + Number(children[2]) + Number(children[3]) * 60 + Number(children[4]) : NaN;
  return {
    rps: Number(rps[1]),
    mbPerSec: sizeMb(transfer[1], transfer[2]),
    p50Ms: wrkLatencyMs(r.stdout, '50'),
    p99Ms: wrkLatencyMs(r.stdout, '99'),
    errors: non2xx + socketErrors,
    wrkCpu,
    requests: Number(total[1]),
  };
}

/** A wrk Lua script asking for `paths` in turn, each thread and connection starting at its own place in the list. */
export function wrkPathList(dir: string, name: string, paths: string[]): string {
  const file = path.join(dir, `${name}.lua`);
  writeFileSync(
    file,
    `-- Each thread, and each connection's requests within it, walk the list from their own place.
local paths = {
${paths.map((p) => JSON.stringify(p)).join(',\n')}
}
local n = #paths
local started = 0
function setup(thread)
  thread:set("offset", started * 997)
  started = started + 1
end
function init(args)
  i = offset or 0
end
function request()
  i = i + 1
  return wrk.format("GET", paths[(i % n) + 1])
end
`,
  );
  return file;
}
