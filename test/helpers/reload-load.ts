// Reloads under load, shared by test/admin-reload.test.ts (short) and bench/reload.bench.ts (long): clients keep
// `connections` requests in flight (tiles and rendered maps, each checked against what it must be) while the
// configuration file is switched between two versions and reloaded through the admin listener, again and again.
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { childrenOf } from './processes.js';

export interface Expected {
  path: string;
  /** Whether an answer's body is right (the caller knows what each path must return). */
  check(status: number, body: Buffer): string | undefined;
}

export interface ReloadLoadOptions {
  url: string;
  adminUrl: string;
  configFile: string;
  /** The two configuration texts the file alternates between (the first is the one running). */
  configs: [string, string];
  reloads: number;
  /** With no reloads: how long the load runs (the baseline a bench compares against). */
  durationMs?: number;
  /** Pause between one reload's answer and the next reload. */
  pauseMs?: number;
  /** Clients and what they ask for in turn: renders get clients of their own, or slow renders would take every one. */
  groups: { connections: number; requests: Expected[] }[];
}

export interface ReloadLoadReport {
  requests: number;
  /** Answers that were not what their path must return (status or body), with the first few reasons. */
  wrong: number;
  reasons: string[];
  /** Reloads that did not answer ok with reloaded: true. */
  failedReloads: number;
  reloadMs: number[];
  durationMs: number;
  /** Milliseconds of every answer, per group (in the order of `groups`). */
  latencies: number[][];
}

function get(agent: http.Agent, url: URL): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: url.hostname, port: url.port, path: url.pathname + url.search, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(60_000, () => req.destroy(new Error('no answer within 60 s')));
  });
}

export function postJson(url: string): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown> });
        } catch (err) {
          reject(err as Error);
        }
      });
    });
    req.on('error', reject);
    req.setTimeout(180_000, () => req.destroy(new Error('the reload did not answer within 180 s')));
    req.end();
  });
}

export async function reloadUnderLoad(o: ReloadLoadOptions): Promise<ReloadLoadReport> {
  const connections = o.groups.reduce((n, g) => n + g.connections, 0);
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const report: ReloadLoadReport = { requests: 0, wrong: 0, reasons: [], failedReloads: 0, reloadMs: [], durationMs: 0, latencies: o.groups.map(() => []) };
  let stop = false;
  const note = (why: string) => {
    report.wrong++;
    if (report.reasons.length < 10) report.reasons.push(why);
  };
  const client = async (requests: Expected[], first: number, latencies: number[]) => {
    for (let next = first; !stop; next++) {
      const r = requests[next % requests.length];
      const t = performance.now();
      try {
        const res = await get(agent, new URL(r.path, o.url));
        latencies.push(performance.now() - t);
        report.requests++;
        const why = r.check(res.status, res.body);
        if (why) note(`${r.path}: ${why}`);
      } catch (err) {
        report.requests++;
        note(`${r.path}: ${(err as Error).message}`);
      }
    }
  };
  const started = performance.now();
  const clients = o.groups.flatMap((g, k) => Array.from({ length: g.connections }, (_, i) => client(g.requests, i, report.latencies[k])));
  if (o.reloads === 0) await new Promise((r) => setTimeout(r, o.durationMs ?? 10_000));
  for (let i = 0; i < o.reloads; i++) {
    writeFileSync(o.configFile, o.configs[(i + 1) % 2]);
    const t = performance.now();
    const res = await postJson(`${o.adminUrl}/__admin/reload`).catch((err: Error) => ({ status: 0, json: { error: err.message } as Record<string, unknown> }));
    report.reloadMs.push(performance.now() - t);
    if (res.status !== 200 || res.json.ok !== true || res.json.reloaded !== true) {
      report.failedReloads++;
      note(`reload ${i + 1}: ${res.status} ${JSON.stringify(res.json)}`);
    }
    if (o.pauseMs) await new Promise((r) => setTimeout(r, o.pauseMs));
  }
  stop = true;
  await Promise.all(clients);
  agent.destroy();
  report.durationMs = performance.now() - started;
  return report;
}

/** Open file descriptors of a process, and how many of them lead to `needle` (a path fragment). */
export function fds(pid: number, needle?: string): { total: number; matching: number } {
  let total = 0;
  let matching = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    total++;
    if (!needle) continue;
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).includes(needle)) matching++;
    } catch {
      // closed while we looked
    }
  }
  return { total, matching };
}

/** Resident memory of a process in MB (VmRSS). */
export function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : 0;
}

/** Node processes of a running service: the process itself and its worker processes (not their browsers). */
export function serviceProcesses(root: number): number[] {
  const isNode = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('cli.js');
    } catch {
      return false;
    }
  };
  return [root, ...childrenOf(root).filter(isNode)];
}

/** Every process below `pid` (a worker's browsers and their helpers). */
export function descendants(pid: number): number[] {
  const out: number[] = [];
  for (const c of childrenOf(pid)) out.push(c, ...descendants(c));
  return out;
}

/** Proportional memory in MB of processes (shared pages split between them, as Chromium's processes share many). */
export function pssMb(pids: number[]): number {
  let kb = 0;
  for (const pid of pids) {
    try {
      const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
      if (m) kb += Number(m[1]);
    } catch {
      // ended while we looked
    }
  }
  return kb / 1024;
}

/** Colours of the style `writeWaterStyle` writes (RGB), for pixel checks of its renders. */
export const WATER_STYLE_LAND: [number, number, number] = [232, 224, 208];
export const WATER_STYLE_SEA: [number, number, number] = [51, 102, 204];

/**
 * Writes a two-layer style over the source `omt` (land as the background, the OpenMapTiles `water` layer in
 * blue) into `dir`; returns its path. Renders of it are cheap and their pixels easy to check.
 */
export function writeWaterStyle(dir: string): string {
  const file = path.join(dir, 'water.json');
  writeFileSync(
    file,
    JSON.stringify({
      version: 8,
      sources: { omt: { type: 'vector', url: 'source://omt' } },
      layers: [
        { id: 'land', type: 'background', paint: { 'background-color': '#e8e0d0' } },
        { id: 'water', type: 'fill', source: 'omt', 'source-layer': 'water', paint: { 'fill-color': '#3366cc', 'fill-antialias': false } },
      ],
    }),
  );
  return file;
}
