// A real varnishd (Debian's varnish, with the xkey vmod of varnish-modules) for a test: the project's VCL
// (deploy/varnish/tiles.vcl) with its backend pointed at the test's server, on a free port, with a working
// directory of its own (`-n`) and no privilege separation (`-j none`: the test runs as root and its temp files
// are not readable by the varnish user). A missing varnishd is a failure, not a skip.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, ROOT } from './server.js';

export interface VarnishServer {
  url: string;
  port: number;
  output(): string;
  stop(): Promise<void>;
}

/** Starts varnishd in front of `backendPort` on 127.0.0.1 (or on `port`), resolving once it answers. */
export async function startVarnish(backendPort: number, port?: number): Promise<VarnishServer> {
  const listen = port ?? (await freePort());
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-varnish-'));
  const vcl = readFileSync(path.join(ROOT, 'deploy/varnish/tiles.vcl'), 'utf8').replace(/\.port = "\d+";/, `.port = "${backendPort}";`);
  writeFileSync(path.join(dir, 'tiles.vcl'), vcl);
  let out = '';
  const proc: ChildProcess = spawn('varnishd', ['-F', '-j', 'none', '-n', path.join(dir, 'work'), '-a', `127.0.0.1:${listen}`, '-f', path.join(dir, 'tiles.vcl'), '-s', 'malloc,64m'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  let failed: Error | undefined;
  proc.on('error', (err) => (failed = new Error(`cannot start varnishd (the Debian packages varnish and varnish-modules): ${err.message}`)));
  let exited = false;
  proc.on('exit', () => (exited = true));
  const url = `http://127.0.0.1:${listen}`;
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (failed) throw failed;
    if (exited) throw new Error(`varnishd exited during start-up:\n${out}`);
    // A PURGE of no key answers 200 from the VCL itself, without the backend.
    const ok = await fetch(url, { method: 'PURGE', headers: { xkey: 'none' } }).then((r) => r.ok, () => false);
    if (ok) break;
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`varnishd did not answer in time:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    port: listen,
    output: () => out,
    async stop() {
      if (!exited) {
        const gone = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
        proc.kill('SIGTERM');
        await Promise.race([gone, new Promise((r) => setTimeout(r, 5_000))]);
        if (!exited) proc.kill('SIGKILL');
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
