// `make bench`: runs every bench/*.bench.ts in turn, each in its own Node process (a benchmark starts and stops
// servers and must not share an event loop or a heap with another). BENCH=name[,name] runs only those
// (name: the file name without .bench.ts, e.g. BENCH=tiles).
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.dirname(fileURLToPath(import.meta.url));
const all = readdirSync(dir)
  .filter((f) => f.endsWith('.bench.ts'))
  .sort()
  .map((f) => ({ name: f.slice(0, -'.bench.ts'.length), file: path.join(dir, f) }));

const wanted = (process.env.BENCH ?? '')
  .split(',')
  .map((s) => s.trim())
  .filter(Boolean);
const unknown = wanted.filter((w) => !all.some((b) => b.name === w));
if (unknown.length) {
  process.stderr.write(`bench: no benchmark named ${unknown.join(', ')} (have: ${all.map((b) => b.name).join(', ')})\n`);
  process.exit(2);
}
const chosen = wanted.length ? all.filter((b) => wanted.includes(b.name)) : all;

const failed: string[] = [];
for (const b of chosen) {
  process.stdout.write(`\n=== bench: ${b.name} ===\n`);
  const started = Date.now();
  const r = spawnSync(process.execPath, ['--import', 'tsx', b.file], { stdio: 'inherit', env: process.env });
  const secs = ((Date.now() - started) / 1000).toFixed(0);
  if (r.status === 0) process.stdout.write(`=== ${b.name}: done in ${secs} s ===\n`);
  else {
    failed.push(b.name);
    process.stdout.write(`=== ${b.name}: FAILED (${r.signal ?? `exit ${r.status}`}) after ${secs} s ===\n`);
  }
}
if (failed.length) {
  process.stderr.write(`bench: failed: ${failed.join(', ')}\n`);
  process.exit(1);
}
