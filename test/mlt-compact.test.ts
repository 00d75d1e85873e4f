// The size of the MLT this service makes from MVT, judged against the format's reference encoder on the
// OpenMapTiles fixture tiles (fixtures/vector/omt-tiles: each .mvt beside the .mlt the reference encoder made of
// it), through the real server (`/data/{id}/{z}/{x}/{y}.mlt` of an MVT source, tile cache off): within 1.1x of the
// reference tile by tile and in total, and smaller than the MVT, raw and gzip-compressed, wherever the reference
// is. The same tiles make the round trip MVT -> MLT -> MVT feature for feature, and the server's gzip answer
// is the same tile. The pool threads that encode run at a lower priority than the event loop (nice +10).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { gunzipSync, gzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { request } from './helpers/foundation.js';
import { startServer, type TestServer } from './helpers/server.js';
import { buildVectorArchives, omtPairs } from './helpers/vector-archives.js';
import { decodeMlt } from '../src/tiles/mlt-codec.js';
import { decodeMvt } from '../src/tiles/mvt-decode.js';
import { encodeMvt } from '../src/tiles/mvt-encode.js';

const MLT_TYPE = 'application/vnd.open-vector-tile';
/** The bound: our MLT may be at most this much larger than the reference encoder's. */
const MAX_RATIO = 1.1;

let server: TestServer;
const pairs = omtPairs();
const served = new Map<string, Buffer>();

before(async () => {
  const archives = buildVectorArchives();
  server = await startServer({ toml: `[cache]\nenabled = false\n[[sources]]\nid = "omt"\ntype = "pmtiles"\npath = "${archives.mvtPmtiles}"\n` });
  for (const p of pairs) {
    const res = await request(server.url, `/data/omt/${p.z}/${p.x}/${p.y}.mlt`, { headers: { 'accept-encoding': 'identity' }, timeoutMs: 60_000 });
    assert.equal(res.status, 200, `${p.name}: status`);
    assert.equal(res.headers['content-type'], MLT_TYPE, `${p.name}: content type`);
    assert.equal(res.headers['content-encoding'], undefined, `${p.name}: sent raw`);
    served.set(p.name, res.body);
  }
});
after(async () => {
  await server?.stop();
});

const gz = (b: Uint8Array) => gzipSync(b).length;

describe('size against the reference encoder', () => {
  for (const p of pairs) {
    test(`${p.name}: within ${MAX_RATIO}x of the reference; smaller than the MVT (raw, gzip) where the reference is`, () => {
      const ours = served.get(p.name)!;
      const ratio = ours.length / p.mlt.length;
      assert.ok(ratio <= MAX_RATIO, `${ours.length} bytes, reference ${p.mlt.length} (${ratio.toFixed(3)}x)`);
      if (p.mlt.length < p.mvt.length) assert.ok(ours.length < p.mvt.length, `raw: ours ${ours.length}, MVT ${p.mvt.length}`);
      if (gz(p.mlt) < gz(p.mvt)) assert.ok(gz(ours) < gz(p.mvt), `gzip: ours ${gz(ours)}, MVT ${gz(p.mvt)}`);
    });
  }
  test(`all tiles: total within ${MAX_RATIO}x of the reference`, () => {
    const ours = pairs.reduce((n, p) => n + served.get(p.name)!.length, 0);
    const reference = pairs.reduce((n, p) => n + p.mlt.length, 0);
    assert.ok(ours <= MAX_RATIO * reference, `total ${ours} bytes, reference ${reference} (${(ours / reference).toFixed(3)}x)`);
  });
});

describe('round trip MVT -> MLT -> MVT', () => {
  for (const p of pairs) {
    test(`${p.name}: every layer and feature (id, type, geometry, properties) as in the source MVT`, () => {
      const source = decodeMvt(p.mvt);
      const back = decodeMvt(encodeMvt(decodeMlt(served.get(p.name)!)));
      assert.equal(back.length, source.length, 'layer count');
      source.forEach((layer, i) => {
        const got = back[i];
        assert.equal(got.name, layer.name);
        assert.equal(got.extent, layer.extent, `${layer.name}: extent`);
        assert.equal(got.features.length, layer.features.length, `${layer.name}: feature count`);
        layer.features.forEach((f, j) => {
          // deepEqual on the whole feature: the first difference names the feature.
          assert.deepEqual(got.features[j], f, `${layer.name}#${j}`);
        });
      });
    });
  }

  test('the gzip answer is the same tile', async () => {
    const densest = pairs.reduce((a, b) => (b.mvt.length > a.mvt.length ? b : a));
    const res = await request(server.url, `/data/omt/${densest.z}/${densest.x}/${densest.y}.mlt`, { headers: { 'accept-encoding': 'gzip' }, timeoutMs: 60_000 });
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-encoding'], 'gzip');
    assert.deepEqual(gunzipSync(res.body), served.get(densest.name));
  });
});

/** Fields of /proc/<pid>/task/<tid>/stat after the command name: [0] state, [1] ppid, … [16] nice. */
function statFields(file: string): string[] {
  const st = readFileSync(file, 'utf8');
  return st.slice(st.lastIndexOf(')') + 2).split(' ');
}

/** The server's process and its descendants (the HTTP worker processes). */
function processTree(root: number): number[] {
  const parent = new Map<number, number>();
  for (const p of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      parent.set(Number(p), Number(statFields(`/proc/${p}/stat`)[1]));
    } catch {
      // gone meanwhile
    }
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) for (const [pid, ppid] of parent) if (ppid === tree[i]) tree.push(pid);
  return tree;
}

describe('encoding priority', () => {
  test('the vector pool thread that transcoded runs at nice +10 from the process (the event loop first)', () => {
    const base = Number(statFields(`/proc/${server.proc.pid}/stat`)[16]);
    const nices: number[] = [];
    for (const pid of processTree(server.proc.pid!)) {
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        try {
          nices.push(Number(statFields(`/proc/${pid}/task/${tid}/stat`)[16]));
        } catch {
          // thread gone meanwhile
        }
      }
    }
    // Run under `nice -n 19`, both are 19 (the ceiling) and this cannot tell them apart; `make test` runs at 0.
    const want = Math.min(19, base + 10);
    assert.ok(nices.includes(want), `a thread at nice ${want} (process at ${base}); threads: ${[...new Set(nices)].join(', ')}`);
  });
});
