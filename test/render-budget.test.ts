// The time budget of a render (src/render/budget.ts), on a controlled clock: it starts when the first frame
// begins on a renderer, covers what follows (encoding), and on expiry answers a timeout and tells its owner
// (who drops the parts still queued).
import assert from 'node:assert/strict';
import { describe, mock, test } from 'node:test';
import { Budget } from '../src/render/budget.js';
import { RenderError } from '../src/render/renderer.js';

const never = new Promise<never>(() => {});

describe('render budget', () => {
  test('does not run before it is started (time in the queue is not counted)', async () => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'] });
    try {
      let expired = 0;
      const b = new Budget(1000, () => expired++);
      const raced = b.race(new Promise((resolve) => setTimeout(() => resolve('done'), 5000)));
      mock.timers.tick(5000);
      assert.equal(await raced, 'done');
      assert.equal(expired, 0);
      b.clear();
    } finally {
      mock.timers.reset();
    }
  });

  test('once started, work past the limit (encoding included) is a timeout, and the owner is told once', async () => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'] });
    try {
      let expired = 0;
      const b = new Budget(1000, () => expired++);
      const raced = b.race(never);
      b.start();
      b.start(); // a second part starting does not restart the clock
      mock.timers.tick(999);
      assert.equal(expired, 0);
      mock.timers.tick(1);
      await assert.rejects(raced, (err: unknown) => err instanceof RenderError && err.reason === 'timeout' && /1000 ms/.test(err.message));
      assert.equal(expired, 1);
    } finally {
      mock.timers.reset();
    }
  });

  test('cleared when the render is done: nothing fires later', async () => {
    mock.timers.enable({ apis: ['setTimeout', 'Date'] });
    try {
      let expired = 0;
      const b = new Budget(1000, () => expired++);
      assert.equal(await b.race(Promise.resolve(7)), 7);
      b.start();
      b.clear();
      mock.timers.tick(10_000);
      assert.equal(expired, 0);
    } finally {
      mock.timers.reset();
    }
  });
});
