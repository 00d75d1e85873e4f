// An upload far above the limit: BENCH_UPLOAD_MB (1024) of file streamed to a server (one process) whose
// server.upload_max_size_mb is BENCH_UPLOAD_LIMIT_MB (500). The server must answer 413 as soon as the stream
// passes the limit, remove the partial file and keep its memory flat (the target: RSS growth < 50 MB).
// Printed: the server's RSS before, after and at its peak during the upload (VmRSS sampled every 20 ms, and
// the kernel's VmHWM), the time to the 413 and the bytes sent by then, and the upload directory's own files after.
//
//   BENCH=upload make bench          (or: node --import tsx bench/upload.bench.ts after a build)
//
// Environment: BENCH_UPLOAD_MB (file size, 1024), BENCH_UPLOAD_LIMIT_MB (the server's limit, 500).
import { once } from 'node:events';
import { createWriteStream, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
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
    // The machine's limit, in the same run: the bytes the server stored before answering, written straight to the
    // same disk by this process in 1 MB chunks.
    const direct = await writeDirect(path.join(dir, 'direct.bin'), LIMIT_MB * MB);
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
      ['upload rate until the answer', `${fmt(answer.sentWhenAnswered / MB / (ms / 1000))} MB/s`],
      [`${fmt(LIMIT_MB)} MB written to the same disk directly`, `${fmt(direct)} ms (${fmt(LIMIT_MB / (direct / 1000))} MB/s)`],
    ];
    process.stdout.write(`\n${table(rows)}\n`);
    if (answer.status !== 413 || left.length !== 0) throw new Error(`expected 413 and no file left; got ${answer.status}, ${left.join(', ') || 'no files'}: ${answer.body}`);
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Milliseconds to write `bytes` to `file` through a write stream, 1 MB at a time, and flush it. */
async function writeDirect(file: string, bytes: number): Promise<number> {
  const chunk = Buffer.alloc(MB, 7);
  const started = performance.now();
  const out = createWriteStream(file);
  for (let done = 0; done < bytes; done += MB) if (!out.write(chunk)) await once(out, 'drain');
  out.end();
  await once(out, 'finish');
  const ms = performance.now() - started;
  rmSync(file);
  return ms;
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
