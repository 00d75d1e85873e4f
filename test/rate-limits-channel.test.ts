// The machine's budgets over the channel between the workers and the primary (src/limits/cluster.ts), both ends in
// this process: each worker's channel is joined to the primary's buckets by a link that hands every message over a
// turn of the event loop later, as a copy, as the cluster's IPC does. What the two-worker server of
// rate-limits.test.ts cannot show from outside: which buckets the primary holds after a reload (those the workers'
// configurations name, no more), and that the channel waits as long as the current configuration says.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadFlexible, MachineBuckets, MachineChannel, type Ask, type PrimaryLink, type Reply } from '../src/limits/cluster.js';

const turn = () => new Promise<void>((r) => setImmediate(r));

/** Worker `workerId`'s link to `primary`; `sent` is every message it sent. */
function joined(primary: MachineBuckets, workerId: number): PrimaryLink & { sent: Ask[] } {
  let onReply: (msg: Reply) => void = () => {};
  const sent: Ask[] = [];
  return {
    sent,
    send(msg) {
      sent.push(msg);
      const copy = structuredClone(msg);
      setImmediate(() => void primary.answer(workerId, copy).then((reply) => setImmediate(() => onReply(structuredClone(reply)))));
    },
    listen(f) {
      onReply = f;
    },
  };
}

const settings = (prefixes: string[], timeoutMs = 1_000) => ({ prefixes: new Set(prefixes), timeoutMs });

test('the primary holds a bucket while a worker names it: buckets a reload drops are forgotten at both ends, and one that comes back starts afresh', async () => {
  const rlf = await loadFlexible();
  const primary = new MachineBuckets(rlf);
  const w1 = new MachineChannel(rlf, 1_000, joined(primary, 1));
  const link2 = joined(primary, 2);
  const w2 = new MachineChannel(rlf, 1_000, link2);
  // Two points per window of a minute: the first consume leaves 1, the second 0, the third is refused.
  assert.equal((await w1.consume('rl:a', 2, 60, 'client')).remainingPoints, 1);
  assert.equal((await w2.consume('rl:a', 2, 60, 'client')).remainingPoints, 0, 'both workers spend from one bucket');
  assert.equal((await w1.consume('rl:b', 2, 60, 'client')).remainingPoints, 1);
  assert.deepEqual(primary.prefixes.sort(), ['rl:a', 'rl:b']);

  // Worker 1 reloads to a configuration without b: the primary drops b (only worker 1 named it) and keeps a.
  w1.follow(settings(['rl:a']));
  await turn();
  await turn();
  assert.deepEqual(primary.prefixes, ['rl:a']);
  // Worker 1 drops a too; worker 2 has not reloaded yet and still spends from it, with its counts.
  w1.follow(settings([]));
  await turn();
  await turn();
  assert.deepEqual(primary.prefixes, ['rl:a']);
  await assert.rejects(w2.consume('rl:a', 2, 60, 'client'), (r: unknown) => r instanceof rlf.RateLimiterRes && r.remainingPoints === 0, 'a is still spent');
  // Worker 2 reloads without a: nothing is held any more; a message that only forgets expects no answer.
  w2.follow(settings([]));
  await turn();
  await turn();
  assert.deepEqual(primary.prefixes, []);
  assert.deepEqual(link2.sent.at(-1)?.ops, []);

  // A configuration naming a and b again: new buckets, new counts.
  w1.follow(settings(['rl:a', 'rl:b']));
  assert.equal((await w1.consume('rl:a', 2, 60, 'client')).remainingPoints, 1, 'a afresh');
  assert.equal((await w1.consume('rl:b', 2, 60, 'client')).remainingPoints, 1, 'b afresh');

  // A worker that exits takes its names with it: the buckets only it named go.
  assert.equal((await w2.consume('rl:c', 2, 60, 'client')).remainingPoints, 1);
  assert.deepEqual(primary.prefixes.sort(), ['rl:a', 'rl:b', 'rl:c']);
  primary.workerGone(2);
  assert.deepEqual(primary.prefixes.sort(), ['rl:a', 'rl:b']);
});

test('the channel waits for the primary as long as the current configuration says, not the first', async () => {
  const rlf = await loadFlexible();
  // A primary that never answers (busy, or stopped): every consume ends on the channel's timeout.
  const silent: PrimaryLink = { send: () => {}, listen: () => {} };
  const channel = new MachineChannel(rlf, 1_000, silent);
  channel.follow(settings(['rl:a'], 30));
  await assert.rejects(channel.consume('rl:a', 2, 60, 'client'), /did not count 1 request\(s\) within 30 ms/);
  channel.follow(settings(['rl:a'], 60));
  await assert.rejects(channel.consume('rl:a', 2, 60, 'client'), /within 60 ms/);
});
