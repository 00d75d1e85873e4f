// The disk render cache's sweep: it keeps the directory under its budget by removing the oldest tiles, and leaves
// alone what is not a cached tile (claims held by a render in progress, temp files a write is about to rename).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { RenderCache } from '../src/shared-cache/render-cache.js';

function tiles(dir: string): string[] {
  return (readdirSync(dir, { recursive: true, encoding: 'utf8' }) as string[]).filter((n) => n.endsWith('.png')).sort();
}

test('a sweep removes the oldest tiles down to 90% of the budget and keeps held claims and temp files', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'tsts-rcache-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const errors: Error[] = [];
  const cache = new RenderCache(0, dir, 1, (err) => errors.push(err));
  // The claim and the temp file are the oldest entries in the directory, so an age-ordered sweep meets them first.
  // A claim counts as held for two hours here, so one dated an hour back is still held.
  const HELD_MS = 7_200_000;
  const release = await cache.claim('s/h/512@1x/9/0/0.png', HELD_MS);
  assert.ok(release, 'the first claim is granted');
  const tmp = path.join(dir, 's', 'h', '512@1x', '0', '0', '0.png.123.abcd.tmp');
  await cache.setDisk('s/h/512@1x/0/0/1.png', Buffer.alloc(10));
  writeFileSync(tmp, Buffer.alloc(100_000));
  const old = new Date(Date.now() - 3_600_000);
  for (const f of [tmp, ...readdirSync(path.join(dir, 'locks')).map((n) => path.join(dir, 'locks', n))]) utimesSync(f, old, old);
  // Twenty 100 kB tiles, each a second newer than the one before: 2 MB against a 1 MiB budget.
  for (let i = 0; i < 20; i++) {
    // Written beside the cache rather than through it, so that no sweep of its own runs during the test.
    const key = `s/h/512@1x/5/${i}/0.png`;
    mkdirSync(path.dirname(path.join(dir, key)), { recursive: true });
    writeFileSync(path.join(dir, key), Buffer.alloc(100_000, i));
    const when = new Date(Date.now() - 3_000_000 + i * 1000);
    utimesSync(path.join(dir, key), when, when);
  }
  await cache.sweep();
  const left = tiles(dir);
  const bytes = left.reduce((n, f) => n + statSync(path.join(dir, f)).size, 0);
  assert.ok(bytes <= 0.9 * 1024 * 1024, `${bytes} bytes of tiles left`);
  // What stayed is the newest run of tiles, with no gap.
  const kept = left.filter((f) => f.startsWith('s/h/512@1x/5/')).map((f) => Number(f.split('/')[4]));
  assert.ok(kept.length >= 5 && kept.length < 20, `kept ${kept.join(',')}`);
  assert.deepEqual(kept.sort((a, b) => a - b), Array.from({ length: kept.length }, (_, k) => 20 - kept.length + k));
  // The claim still holds: a second render of the same key is refused until it is released.
  assert.equal(await cache.claim('s/h/512@1x/9/0/0.png', HELD_MS), undefined, 'the held claim survived the sweep');
  assert.ok(statSync(tmp).isFile(), 'the temp file of a write in progress survived the sweep');
  await release!();
  assert.ok(await cache.claim('s/h/512@1x/9/0/0.png', HELD_MS), 'released, the key can be claimed again');
  assert.deepEqual(errors, []);
});
