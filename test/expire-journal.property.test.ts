// The journal and the parts of a batch (src/expire/journal.ts, parts.ts), in-process: whatever batches a machine
// takes, with compactions among them (a tiny bound: nearly every append rewrites the file), a process reading the
// journal holds the same expiries as the process that wrote it; a batch cut into parts (from its whole encoding, or
// from its header and a view of its keys, as the machine's hub sends it) is the same batch once put together, and
// one missing a part is dropped.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from './helpers/fast-check.js';
import { unique } from '../src/expire/area-times.js';
import { encodeBatch, encodeBatchPieces, type ExpiryBatch } from '../src/expire/batch.js';
import { Expiries } from '../src/expire/expiries.js';
import { ExpiryJournal, replayJournal } from '../src/expire/journal.js';
import { batchParts, PartAssembler, splitParts } from '../src/expire/parts.js';
import { tileKey } from '../src/expire/tile-key.js';
import type { Logger } from '../src/log.js';

const quiet = { info() {}, warn() {}, error() {}, debug() {} } as unknown as Logger;

const tileArb = fc.integer({ min: 0, max: 9 }).chain((z) => fc.tuple(fc.constant(z), fc.integer({ min: 0, max: 2 ** z - 1 }), fc.integer({ min: 0, max: 2 ** z - 1 })));

const batchArb = fc.record({
  sources: fc.subarray(['a', 'b', 'c'], { minLength: 1 }),
  band: fc.constantFrom({ min: 0, max: Infinity }, { min: 3, max: 8 }),
  tiles: fc.array(tileArb, { minLength: 1, maxLength: 30 }),
  at: fc.integer({ min: 1, max: 50 }),
});

let n = 0;
function batchOf(b: { sources: string[]; band: { min: number; max: number }; tiles: [number, number, number][]; at: number }): ExpiryBatch {
  const tiles = unique(Float64Array.from(b.tiles.map(([z, x, y]) => tileKey(z, x, y))).sort());
  return { id: `t:${++n}`, at: 1_000 + b.at, sources: b.sources, band: b.band, tiles, input: 'list' };
}

test('a journal read back, compacted or not, holds what its writer holds', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(batchArb, { minLength: 1, maxLength: 12 }), fc.array(tileArb, { minLength: 1, maxLength: 25 }), fc.boolean(), async (batches, probes, small) => {
      const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-journal-'));
      try {
        const written = new Expiries();
        // A small index bound coarsens: the snapshot must give back the coarsened index, not the batches.
        // (Up to 360 tiles given: 40 entries makes most runs coarsen, several zooms deep.)
        written.maxTiles = small ? 40 : 4_000_000;
        const journal = new ExpiryJournal(dir, written, 300, quiet);
        for (const b of batches.map(batchOf)) {
          written.apply(b);
          journal.append(b);
        }
        await journal.close();
        const read = new Expiries();
        read.maxTiles = written.maxTiles;
        replayJournal(dir, read);
        for (const [z, x, y] of probes) {
          for (const s of ['a', 'b', 'c']) assert.equal(read.expiredAt([s], z, x, y), written.expiredAt([s], z, x, y), `${s} ${z}/${x}/${y}`);
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }),
    { numRuns: 100 },
  );
});

test('a batch cut into parts is the same batch put together; a missing part drops it', () => {
  fc.assert(
    fc.property(batchArb, fc.integer({ min: 8, max: 400 }), fc.boolean(), (b, size, pieces) => {
      const batch = batchOf(b);
      // Cut from the whole encoding, or from its pieces as the hub sends them (header parts, then key parts).
      const parts = pieces ? batchParts(encodeBatchPieces(batch), size) : splitParts(encodeBatch(batch), size);
      if (pieces) {
        assert.ok(parts.every((p) => p.length <= size), 'no part is larger than the bound');
        assert.deepEqual(Buffer.concat(parts), encodeBatch(batch), 'the parts are the encoding, in order');
        // The key parts are views of the batch's own keys (no copy), once the batch takes several parts.
        if (parts.length > 1) assert.equal(parts[parts.length - 1].buffer, batch.tiles.buffer);
      }
      const whole = new PartAssembler();
      let got: ExpiryBatch | undefined;
      parts.forEach((data, part) => {
        const out = whole.add({ id: batch.id, part, parts: parts.length, data });
        assert.equal(out === undefined, part < parts.length - 1);
        got = out ?? got;
      });
      assert.deepEqual({ ...got!, tiles: [...got!.tiles] }, { ...batch, tiles: [...batch.tiles], lines: undefined, marked: undefined });
      if (parts.length > 1) {
        const gap = new PartAssembler();
        const out = parts.map((data, part) => (part === 1 ? undefined : gap.add({ id: batch.id, part, parts: parts.length, data })));
        assert.ok(out.every((o) => o === undefined), 'a batch without its second part is not put together');
      }
    }),
    { numRuns: 300 },
  );
});
