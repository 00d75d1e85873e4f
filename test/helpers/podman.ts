// Podman for the image tests (test/image.test.ts): Debian's podman 4.3 as root with runc and cgroupfs, and a
// containers.conf of our own under .tmp/ (no default ulimits; netavark with aardvark-dns, so that containers of
// one network find each other by name). Nothing under /etc is changed.
import { execFile, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './server.js';

const CONF_DIR = path.join(ROOT, '.tmp/image');
export const CONTAINERS_CONF = path.join(CONF_DIR, 'containers.conf');
/** The flags every podman command gets here (crun and the systemd cgroup manager fail on this host). */
export const GLOBAL = ['--runtime', 'runc', '--cgroup-manager=cgroupfs'];
/** The containers.conf of the tests, as docs/deployment.md shows it. */
export const CONTAINERS_CONF_TEXT = '[containers]\ndefault_ulimits = []\n\n[network]\nnetwork_backend = "netavark"\n';

/** Writes the containers.conf the podman commands of the tests use, and returns the environment pointing at it. */
export function podmanEnv(): NodeJS.ProcessEnv {
  mkdirSync(CONF_DIR, { recursive: true });
  writeFileSync(CONTAINERS_CONF, CONTAINERS_CONF_TEXT);
  return { ...process.env, CONTAINERS_CONF };
}

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end (killed after `timeoutMs`); never throws. */
export function run(cmd: string, args: string[], timeoutMs: number, env = podmanEnv(), input?: string): Promise<Run> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env, cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (err) => ((stderr += err.message), clearTimeout(timer), resolve({ code: -1, stdout, stderr })));
    child.on('close', (code) => (clearTimeout(timer), resolve({ code, stdout, stderr })));
    child.stdin.end(input ?? '');
  });
}

/** `podman ARGS` that must succeed: its stdout, or an error carrying its output. */
export async function podman(args: string[], timeoutMs = 120_000, input?: string): Promise<string> {
  const r = await run('podman', [...GLOBAL, ...args], timeoutMs, podmanEnv(), input);
  if (r.code !== 0) throw new Error(`podman ${args.join(' ')} exited ${r.code}:\n${r.stderr.slice(-4000)}\n${r.stdout.slice(-4000)}`);
  return r.stdout;
}

/** `podman ARGS` whose exit code and output the caller checks itself. */
export const podmanRun = (args: string[], timeoutMs = 120_000) => run('podman', [...GLOBAL, ...args], timeoutMs);

/** `podman ARGS` whose failure does not matter (cleanup). */
export const podmanQuiet = (args: string[], timeoutMs = 120_000) => run('podman', [...GLOBAL, ...args], timeoutMs).then(() => undefined);

/** podman-compose with the same podman settings (it calls `podman` with the environment it gets). */
export async function podmanCompose(args: string[], env: Record<string, string>, timeoutMs = 300_000): Promise<string> {
  const r = await run('podman-compose', ['--podman-args', GLOBAL.join(' '), ...args], timeoutMs, { ...podmanEnv(), ...env });
  if (r.code !== 0) throw new Error(`podman-compose ${args.join(' ')} exited ${r.code}:\n${r.stderr.slice(-4000)}\n${r.stdout.slice(-4000)}`);
  return r.stdout;
}

export interface Fetched {
  status: number;
  headers: Record<string, string>;
  sha256: string;
  length: number;
}

// Runs inside a container: one GET with a time limit, printed as JSON (status, headers, the body's hash).
const FETCH_SCRIPT = `const u=process.argv[1];fetch(u,{signal:AbortSignal.timeout(60000)}).then(async r=>{const b=Buffer.from(await r.arrayBuffer());console.log(JSON.stringify({status:r.status,headers:Object.fromEntries(r.headers),sha256:require('crypto').createHash('sha256').update(b).digest('hex'),length:b.length}))}).catch(e=>{console.error(String(e));process.exit(3)})`;

/** A GET from inside a container, with the image's own node. */
export async function fetchInside(container: string, url: string): Promise<Fetched> {
  return JSON.parse(await podman(['exec', container, 'node', '-e', FETCH_SCRIPT, url], 90_000)) as Fetched;
}

/** Whether a command is installed (it runs `CMD --version`). */
export const has = (cmd: string) => new Promise<boolean>((resolve) => execFile(cmd, ['--version'], (err) => resolve(!err)));
