// server.semi_space_mb becomes node's --max-semi-space-size for forked workers, unless the operator set the flag
// for node already (its own arguments, or NODE_OPTIONS, which workers inherit). test/cluster.test.ts checks that
// the running workers get it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { workerExecArgv } from '../src/cluster/worker-flags.js';

test('the configured semi-space is added to the primary\'s own flags', () => {
  assert.deepEqual(workerExecArgv(['--enable-source-maps'], undefined, 64), ['--enable-source-maps', '--max-semi-space-size=64']);
  assert.deepEqual(workerExecArgv([], '', 32), ['--max-semi-space-size=32']);
});

test('0 leaves Node\'s own young generation', () => {
  assert.deepEqual(workerExecArgv(['--enable-source-maps'], undefined, 0), ['--enable-source-maps']);
});

test('a semi-space given to node itself wins, in either spelling, on the command line or in NODE_OPTIONS', () => {
  assert.deepEqual(workerExecArgv(['--max-semi-space-size=8'], undefined, 64), ['--max-semi-space-size=8']);
  assert.deepEqual(workerExecArgv(['--max-semi-space-size', '8'], undefined, 64), ['--max-semi-space-size', '8']);
  assert.deepEqual(workerExecArgv(['--max_semi_space_size=8'], undefined, 64), ['--max_semi_space_size=8']);
  assert.deepEqual(workerExecArgv([], '--max-old-space-size=512  --max-semi-space-size=8', 64), []);
  // Other young-generation flags are not the same setting.
  assert.deepEqual(workerExecArgv(['--min-semi-space-size=2'], '--max-old-space-size=512', 64), ['--min-semi-space-size=2', '--max-semi-space-size=64']);
});
