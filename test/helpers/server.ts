// Starts the real built server (dist/cli.js) on a free port for a test, and stops it afterwards.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const FIXTURES = path.join(ROOT, 'fixtures');
export const CLI = path.join(ROOT, 'dist/cli.js');

/** A fixture path, absolute (for TOML written to a temp dir). */
export const fixture = (...parts: string[]) => path.join(FIXTURES, ...parts);

/**
 * A configuration serving OSM Liberty over the OpenMapTiles planet z0-1 (with the Natural Earth raster it also
 * uses) and the fixture fonts; `sections` (TOML tables such as `[server]` or `[render]`) are appended.
 */
export function osmLibertyToml(sections = ''): string {
  return `fonts = "${fixture('fonts')}"
[[sources]]
id = "openmaptiles"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
[[sources]]
id = "natural_earth"
type = "pmtiles"
path = "${fixture('raster/natural-earth-png-z0-1.pmtiles')}"
[[styles]]
id = "osm-liberty"
path = "${fixture('styles/osm-liberty/style.json')}"
${sections}
`;
}

/** Ports this test process has handed out: the kernel may give a just-closed port to the next bind(0), so two
 *  calls in a row (a main and an admin port) could otherwise return the same number. */
const handedOut = new Set<number>();

export async function freePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const srv = net.createServer();
      srv.listen(0, '127.0.0.1', () => {
        const { port } = srv.address() as net.AddressInfo;
        srv.close(() => resolve(port));
      });
      srv.on('error', reject);
    });
    if (!handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
}

export interface TestServer {
  url: string;
  port: number;
  proc: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  configFile: string | undefined;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

export interface StartOptions {
  /** TOML text of a config file (written to a temp dir); or */
  toml?: string;
  /** archive files to serve from the command line. */
  files?: string[];
  workers?: number;
  env?: NodeJS.ProcessEnv;
  /** Extra CLI arguments. */
  args?: string[];
  timeoutMs?: number;
  /** Listen on this port rather than a free one (a restart on the port a test's URLs name). */
  port?: number;
}

export function writeTempConfig(toml: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-'));
  const file = path.join(dir, 'config.toml');
  writeFileSync(file, toml);
  return file;
}

/**
 * A temp directory of a process's own (its TMPDIR): a server without `[cache] dir` keeps its render cache and its
 * expiry journal there, and one shared between processes would hand a test what an earlier one left (a journal
 * read at start-up logs a line; rendered tiles answer from an older run).
 */
export function scratchTmp(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'tsts-scratch-'));
}

/** Runs the CLI to completion (for start-up failures, --help, --version), in `cwd` when given. */
export async function runCli(args: string[], env: NodeJS.ProcessEnv = {}, timeoutMs = 20_000, cwd?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CLI, ...args], { cwd, env: { ...process.env, TMPDIR: scratchTmp(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    proc.stdout.on('data', (d) => (stdout += d));
    proc.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`CLI did not exit within ${timeoutMs} ms: ${stdout}${stderr}`));
    }, timeoutMs);
    proc.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** The JSON log lines a server has written so far, parsed (other output, such as its pretty lines, left out). */
export function jsonLogLines<T = Record<string, unknown>>(s: { output(): string }): T[] {
  return s
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as T);
}

export async function startServer(opts: StartOptions): Promise<TestServer> {
  const port = opts.port ?? (await freePort());
  const configFile = opts.toml !== undefined ? writeTempConfig(opts.toml) : undefined;
  const args = configFile ? ['--config', configFile] : [...(opts.files ?? [])];
  args.push('--host', '127.0.0.1', '--port', String(port), '--workers', String(opts.workers ?? 1), ...(opts.args ?? []));
  const proc = spawn(process.execPath, [CLI, ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn', TMPDIR: scratchTmp(), ...opts.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  let exited = false;
  proc.on('exit', () => (exited = true));
  for (;;) {
    if (exited) throw new Error(`server exited during start-up:\n${out}`);
    try {
      const res = await fetch(`${url}/health`);
      if (res.ok) break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`server did not answer /health in time:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    port,
    proc,
    configFile,
    output: () => out,
    stop(signal = 'SIGTERM') {
      return new Promise((resolve) => {
        if (exited || proc.exitCode !== null) return resolve(proc.exitCode);
        const kill = setTimeout(() => proc.kill('SIGKILL'), 15_000);
        proc.once('exit', (code) => {
          clearTimeout(kill);
          resolve(code);
        });
        proc.kill(signal);
      });
    },
  };
}
