// An upload far above the limit: BENCH_UPLOAD_MB (1024) of file streamed to a server (one process) whose
// server.upload_max_size_mb is BENCH_UPLOAD_LIMIT_MB (500). The server must answer 413 as soon as the stream
// passes the limit, remove the partial file and keep its memory flat (the target: RSS growth < 50 MB).
// Printed: the server's RSS before, after and at its peak during the upload (VmRSS sampled every 20 ms, and
// the kernel's VmHWM), the time to the 413 and the bytes sent by then, and the upload directory's own files after.
//
//   BENCH=upload make bench          (or: node --import tsx bench/upload.bench.ts after a build)
//
// Environment: BENCH_UPLOAD_MB (file size, 1024), BENCH_UPLOAD_LIMIT_MB (the server's limit, 500).
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { memoryOf, streamUpload } from '../test/helpers/upload.js';
import { ChildServer, envNumber, fmt, freePort, ROOT, table } from './lib.js';

const FILE_MB = envNumber('BENCH_UPLOAD_MB', 1024);
const LIMIT_MB = envNumber('BENCH_UPLOAD_LIMIT_MB', 500);
const MB = 1024 * 1024;
const CLI = path.join(ROOT, 'dist/cli.js');

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-bench-upload-'));
  const uploads = path.join(dir, 'uploads');
  mkdirSync(uploads);
  const port = await freePort();
  const file = path.join(dir, 'upload.toml');
  // The body timeout is raised so that only the size limit can stop the upload.
  writeFileSync(
    file,
    `[server]\nhost = "127.0.0.1"\nport = ${port}\nworkers = 1\ndisable_render = true\nupload_dir = ${JSON.stringify(uploads)}\nupload_max_size_mb = ${LIMIT_MB}\nrequest_timeout_ms = 3600000\n`,
  );
  const server = ChildServer.start('upload', process.execPath, [CLI, '--config', file], { env: { LOG_LEVEL: 'warn' } });
  const base = `http://127.0.0.1:${port}`;
  try {
    await server.waitReady(`${base}/health`);
    const pid = server.proc.pid!;
    const before = memoryOf(pid);
    let peak = before.rssKb;
    const sampler = setInterval(() => {
      try {
        peak = Math.max(peak, memoryOf(pid).rssKb);
      } catch {
        // the process is gone: the answer below says why
      }
    }, 20);
    const started = performance.now();
    const answer = await streamUpload(base, 'big.mbtiles', FILE_MB * MB, MB).finally(() => clearInterval(sampler));
    const ms = performance.now() - started;
    const after = memoryOf(pid);
    const left = readdirSync(uploads).filter((n) => /^\.?upload-/.test(n));
    const mb = (kb: number) => `${fmt(kb / 1024, 1)} MB`;
    const rows = [
      ['measure', 'value'],
      ['file streamed', `${fmt(FILE_MB)} MB`],
      ['server limit', `${fmt(LIMIT_MB)} MB`],
      ['answer', `${answer.status} (Connection: ${answer.headers.connection ?? '-'})`],
      ['time to the answer', `${fmt(ms)} ms`],
      ['file bytes sent by then', `${mb(answer.sentWhenAnswered / 1024)}${answer.finishedSending ? ' (everything)' : ''}`],
      ['server RSS before', mb(before.rssKb)],
      ['server RSS peak during (sampled)', `${mb(peak)} (+${mb(peak - before.rssKb)})`],
      ['server RSS after', mb(after.rssKb)],
      ['server VmHWM before / after', `${mb(before.peakKb)} / ${mb(after.peakKb)}`],
      ['upload files left in the directory', String(left.length)],
    ];
    process.stdout.write(`\n${table(rows)}\n`);
    if (answer.status !== 413 || left.length !== 0) throw new Error(`expected 413 and no file left; got ${answer.status}, ${left.join(', ') || 'no files'}: ${answer.body}`);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
