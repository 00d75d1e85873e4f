// A pool's bound is counted by the pool's owner, and a full pool is told apart by its type (PoolFullError), not
// by a library's wording: the tasks held are those running plus those waiting, a settled task (done or failed)
// frees its place, and the pool underneath never sees a task past the bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BoundedPool, PoolFullError, type TaskRunner } from '../src/tiles/bounded-pool.js';

/** A pool whose tasks settle only when the test says so. */
function heldPool(): TaskRunner<unknown, unknown> & { started: unknown[]; settle: (i: number, ok: boolean) => void } {
  const pending: { resolve: (v: unknown) => void; reject: (e: Error) => void }[] = [];
  const started: unknown[] = [];
  return {
    started,
    run(task) {
      started.push(task);
      return new Promise((resolve, reject) => pending.push({ resolve, reject }));
    },
    settle(i, ok) {
      if (ok) pending[i].resolve(i);
      else pending[i].reject(new Error('the task failed'));
    },
  };
}

test('a pool holding its capacity refuses the next task with PoolFullError, and takes one again once a task settles', async () => {
  const inner = heldPool();
  const pool = new BoundedPool(inner, 3, 'test pool');
  const runs = [pool.run('a'), pool.run('b'), pool.run('c')];
  await assert.rejects(pool.run('d'), (err: unknown) => err instanceof PoolFullError && /test pool holds 3 tasks/.test(err.message));
  assert.deepEqual(inner.started, ['a', 'b', 'c'], 'the refused task never reached the pool');
  inner.settle(0, true);
  assert.equal(await runs[0], 0);
  const e = pool.run('e');
  await assert.rejects(pool.run('f'), PoolFullError);
  inner.settle(1, false);
  await assert.rejects(runs[1], /the task failed/);
  const g = pool.run('g');
  assert.deepEqual(inner.started, ['a', 'b', 'c', 'e', 'g'], 'a failed task frees its place as a finished one does');
  inner.settle(2, true);
  inner.settle(3, true);
  inner.settle(4, true);
  await Promise.all([runs[2], e, g]);
});
