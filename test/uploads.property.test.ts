// Property-based tests of the upload parsers of user input: the `{id}` path parameter, the file name -> type
// decision, the names the server reports and writes, and the multipart reading itself (random file bytes,
// names, limits and chunkings through busboy into a real file).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import fc from './helpers/fast-check.js';
import { displayName, isOwnFileName, parseUploadIdParam, partPath, storedPath, uploadKind } from '../src/uploads/names.js';
import { receiveUpload } from '../src/uploads/receive.js';
import { tempDir } from './helpers/foundation.js';
import { BOUNDARY, multipartBody } from './helpers/upload.js';

const RUNS = { numRuns: 2000 };
const uuid = fc.uuid().map((u) => u.toLowerCase());
const EXT_FORMAT: Record<string, string> = { mbtiles: 'mbtiles', sqlite: 'mbtiles', db: 'mbtiles', tif: 'cog', tiff: 'cog' };

/** Any case of `s`, letter by letter. */
const anyCase = (s: string) => fc.array(fc.boolean(), { minLength: s.length, maxLength: s.length }).map((up) => [...s].map((ch, i) => (up[i] ? ch.toUpperCase() : ch)).join(''));

test('parseUploadIdParam: the UUID and upload-<uuid> in any case give the UUID in lower case', () => {
  fc.assert(
    fc.property(uuid, fc.boolean(), (id, prefixed) => {
      const shown = fc.sample(anyCase(id), 1)[0];
      assert.equal(parseUploadIdParam(prefixed ? `upload-${shown}` : shown), id);
    }),
    RUNS,
  );
});

test('parseUploadIdParam: anything else is refused (and a result is always a UUID)', () => {
  const near = fc.oneof(
    fc.string(),
    uuid.map((u) => u.slice(1)),
    uuid.map((u) => `${u}x`),
    uuid.map((u) => ` ${u}`),
    uuid.map((u) => `upload-${u}/`),
    uuid.map((u) => `upload_${u}`),
    uuid.map((u) => `../${u}`),
    uuid.map((u) => u.replace(/-/g, '')),
    uuid.map((u) => `${u}\n`),
    uuid.map((u) => u.replace('a', 'g')),
  );
  fc.assert(
    fc.property(near, (s) => {
      const got = parseUploadIdParam(s);
      const strict = /^(upload-)?[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s);
      if (!strict) assert.equal(got, undefined, JSON.stringify(s));
      else assert.equal(got, s.slice(-36).toLowerCase());
    }),
    RUNS,
  );
});

test('uploadKind: the last extension decides, in any case; everything else is refused', () => {
  const ext = fc.oneof(fc.constantFrom(...Object.keys(EXT_FORMAT), 'pmtiles', 'txt', 'tif.gz', 'mbtiles ', '', 'constructor', '__proto__', 'toString'), fc.string({ maxLength: 6 }));
  fc.assert(
    fc.property(fc.string(), ext, (stem, e) => {
      const cased = fc.sample(anyCase(e), 1)[0];
      const got = uploadKind(`${stem}.${cased}`);
      const lower = cased.toLowerCase();
      if (Object.hasOwn(EXT_FORMAT, lower)) assert.deepEqual(got, { ext: lower, format: EXT_FORMAT[lower] });
      else assert.equal(got, undefined, JSON.stringify(`${stem}.${cased}`));
    }),
    RUNS,
  );
  fc.assert(fc.property(fc.string().filter((s) => !s.includes('.')), (s) => assert.equal(uploadKind(s), undefined)));
});

test('displayName: no control characters, at most 255 characters, printable names kept', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 600 }), (s) => {
      const out = displayName(s);
      assert.ok(out.length <= 255);
      assert.ok(!/[\u0000-\u001f\u007f]/.test(out));
      const printable = s.replace(/[\u0000-\u001f\u007f]/g, '');
      assert.equal(out, printable.slice(0, 255));
    }),
    RUNS,
  );
});

test('stored and partial names: inside the directory, recognised as own names; other names are not', () => {
  fc.assert(
    fc.property(uuid, fc.constantFrom(...Object.keys(EXT_FORMAT)), (id, ext) => {
      const dir = '/srv/uploads';
      for (const file of [storedPath(dir, id, ext), partPath(dir, id), `${partPath(dir, id)}-wal`, `${storedPath(dir, id, ext)}-journal`]) {
        assert.equal(path.dirname(file), dir);
        assert.ok(isOwnFileName(path.basename(file)), file);
      }
    }),
    RUNS,
  );
  fc.assert(
    fc.property(fc.string(), (s) => {
      const own =
        /^(upload-[0-9a-f-]{36}\.(mbtiles|sqlite|db|tif|tiff)|\.upload-[0-9a-f-]{36}\.part)(-journal|-wal|-shm)?$/.test(s) &&
        parseUploadIdParam(s.replace(/^\./, '').replace(/\.[a-z-]+$/, '')) !== undefined;
      assert.equal(isOwnFileName(s), own, JSON.stringify(s));
    }),
    RUNS,
  );
});

/** Feeds `body` to receiveUpload in the given chunk sizes, like a socket would. */
function chunked(body: Buffer, sizes: number[]): Readable {
  const parts: Buffer[] = [];
  let at = 0;
  for (let i = 0; at < body.length; i++) {
    const n = Math.max(1, sizes[i % sizes.length]);
    parts.push(body.subarray(at, at + n));
    at += n;
  }
  return Readable.from(parts);
}

const headers = { 'content-type': `multipart/form-data; boundary=${BOUNDARY}` };

test('receiveUpload: any file within the limit arrives byte for byte; past the limit nothing is left', async () => {
  const dir = tempDir('tsts-upload-prop-');
  let n = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.uint8Array({ maxLength: 4096 }),
      fc.integer({ min: 0, max: 4096 }),
      fc.array(fc.integer({ min: 1, max: 700 }), { minLength: 1, maxLength: 5 }),
      fc.string({ minLength: 1, maxLength: 40 }).filter((s) => !/["\\/\r\n\u0000-\u001f%]/.test(s) && s !== '.' && s !== '..'),
      fc.array(fc.record({ field: fc.constantFrom('note', 'title'), data: fc.string({ maxLength: 50 }).filter((s) => !s.includes(BOUNDARY)) }), { maxLength: 3 }),
      async (data, limit, sizes, name, fields) => {
        const dest = path.join(dir, `f${n++}`);
        const body = multipartBody([...fields, { field: 'file', fileName: name, data }]);
        const got = await receiveUpload(chunked(body, sizes), headers, dest, limit);
        if (data.length <= limit) {
          assert.equal(got.kind, 'file', JSON.stringify(got));
          if (got.kind === 'file') {
            assert.equal(got.bytes, data.length);
            assert.equal(got.fileName, name);
          }
          assert.ok(Buffer.from(data).equals(readFileSync(dest)));
        } else {
          assert.equal(got.kind, 'too-large');
          assert.ok(!existsSync(dest), 'the partial file is removed');
        }
      },
    ),
    { numRuns: 300 },
  );
});

test('receiveUpload: a body cut anywhere is never a file, and leaves nothing behind', async () => {
  const dir = tempDir('tsts-upload-cut-');
  let n = 0;
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ minLength: 1, maxLength: 2048 }), fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }), async (data, at) => {
      const body = multipartBody([{ field: 'file', fileName: 'a.mbtiles', data }]);
      // Cut before the closing `--` of the last boundary.
      const cut = Math.floor(at * (body.length - 4));
      const dest = path.join(dir, `c${n++}`);
      const got = await receiveUpload(Readable.from([body.subarray(0, cut)]), headers, dest, 1 << 20);
      assert.notEqual(got.kind, 'file', `cut at ${cut} of ${body.length}`);
      assert.ok(!existsSync(dest), 'nothing left');
    }),
    { numRuns: 300 },
  );
  assert.deepEqual(readdirSync(dir), []);
});

test('receiveUpload: random bytes as a body never throw and never leave a file', async () => {
  const dir = tempDir('tsts-upload-junk-');
  await fc.assert(
    fc.asyncProperty(fc.uint8Array({ maxLength: 1024 }), fc.constantFrom(headers, { 'content-type': 'text/plain' }, {}), async (junk, h) => {
      const got = await receiveUpload(Readable.from([Buffer.from(junk)]), h, path.join(dir, 'junk'), 1 << 20);
      assert.ok(['bad-request', 'aborted'].includes(got.kind), JSON.stringify(got));
    }),
    { numRuns: 300 },
  );
  assert.deepEqual(readdirSync(dir), []);
});
