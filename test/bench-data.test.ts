// The PMTiles v3 writer of the benchmark data and of `tileserver-ts seed` (src/seed/pmtiles-writer.ts): archives
// it writes read back with the `pmtiles` package, with a root directory alone and with leaf directories,
// deduplicated and run-length encoded; the streaming form writes the same bytes as the in-memory one.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { Compression, PMTiles, TileType, zxyToTileId, type Source } from 'pmtiles';
import { buildPmtiles, HEADER_BYTES, writePmtilesFile, type PmtilesTileInput } from '../src/seed/pmtiles-writer.js';
import { tempDir } from './helpers/foundation.js';

function memorySource(buf: Buffer): Source {
  return {
    getKey: () => 'memory',
    getBytes: async (offset: number, length: number) => ({ data: buf.buffer.slice(buf.byteOffset + offset, buf.byteOffset + offset + length) as ArrayBuffer }),
  };
}

/** z0..z5, every tile; tiles in the west half of z4 and z5 share one content (as ocean tiles would). */
function pyramid(): PmtilesTileInput[] {
  const shared = Buffer.from('the same bytes');
  const tiles: PmtilesTileInput[] = [];
  for (let z = 0; z <= 5; z++) {
    for (let x = 0; x < 2 ** z; x++) {
      for (let y = 0; y < 2 ** z; y++) {
        // Lengths that vary from tile to tile, so that directories do not compress to almost nothing.
        const data = z >= 4 && x < 2 ** (z - 1) ? shared : Buffer.from(`tile ${z}/${x}/${y} ${'.'.repeat((x * 7919 + y * 104729 + z) % 97)}`);
        tiles.push({ z, x, y, data });
      }
    }
  }
  return tiles;
}

const OPTIONS = {
  tileType: TileType.Mvt,
  tileCompression: Compression.None,
  bounds: [-180, -85.0511287798066, 180, 85.0511287798066] as [number, number, number, number],
  center: [2.35, 48.85, 3] as [number, number, number],
  metadata: { name: 'test', vector_layers: [{ id: 'x', fields: {} }] },
};

async function readAll(archive: Buffer, tiles: PmtilesTileInput[]): Promise<void> {
  const reader = new PMTiles(memorySource(archive));
  for (const t of tiles) {
    const got = await reader.getZxy(t.z, t.x, t.y);
    assert.ok(got, `tile ${t.z}/${t.x}/${t.y} is missing`);
    assert.deepEqual(Buffer.from(got.data), Buffer.from(t.data), `tile ${t.z}/${t.x}/${t.y}`);
  }
}

describe('PMTiles writer', () => {
  it('writes a root-only archive that reads back tile for tile', async () => {
    const tiles = pyramid();
    const archive = buildPmtiles(tiles, OPTIONS);
    const header = await new PMTiles(memorySource(archive)).getHeader();
    assert.equal(header.specVersion, 3);
    assert.equal(header.rootDirectoryOffset, HEADER_BYTES);
    assert.equal(header.leafDirectoryLength, 0);
    assert.equal(header.minZoom, 0);
    assert.equal(header.maxZoom, 5);
    assert.equal(header.tileType, TileType.Mvt);
    assert.equal(header.tileCompression, Compression.None);
    assert.equal(header.internalCompression, Compression.Gzip);
    assert.equal(header.clustered, true);
    assert.deepEqual([header.minLon, header.minLat, header.maxLon, header.maxLat], [-180, -85.0511288, 180, 85.0511288]);
    assert.deepEqual([header.centerLon, header.centerLat, header.centerZoom], [2.35, 48.85, 3]);
    assert.equal(header.numAddressedTiles, tiles.length);
    // The shared content is stored once, and runs of it collapse into fewer entries than tiles.
    const distinct = new Set(tiles.map((t) => Buffer.from(t.data).toString('hex'))).size;
    assert.equal(header.numTileContents, distinct);
    assert.ok(header.numTileEntries < tiles.length, `${header.numTileEntries} entries for ${tiles.length} tiles`);
    assert.deepEqual(await new PMTiles(memorySource(archive)).getMetadata(), OPTIONS.metadata);
    await readAll(archive, tiles);
  });

  it('moves entries into leaf directories when the root would not fit', async () => {
    const tiles = pyramid();
    const archive = buildPmtiles(tiles, { ...OPTIONS, leafSize: 16, maxRootBytes: HEADER_BYTES + 120 });
    const header = await new PMTiles(memorySource(archive)).getHeader();
    assert.ok((header.leafDirectoryLength ?? 0) > 0, 'no leaf directories were written');
    assert.ok(header.rootDirectoryLength <= 120);
    await readAll(archive, tiles);
  });

  it('answers nothing for a tile it does not hold', async () => {
    const tiles = pyramid().filter((t) => !(t.z === 3 && t.x === 5 && t.y === 2));
    const reader = new PMTiles(memorySource(buildPmtiles(tiles, { ...OPTIONS, leafSize: 16, maxRootBytes: HEADER_BYTES + 120 })));
    assert.equal(await reader.getZxy(3, 5, 2), undefined);
    assert.ok(await reader.getZxy(3, 5, 3));
  });

  it('streamed to a file in tile-id order, the archive is byte for byte the in-memory one (leaves included)', () => {
    const tiles = pyramid().sort((a, b) => zxyToTileId(a.z, a.x, a.y) - zxyToTileId(b.z, b.x, b.y));
    const opts = { ...OPTIONS, leafSize: 16, maxRootBytes: HEADER_BYTES + 120 };
    const file = path.join(tempDir('tsts-pmtiles-writer-'), 'streamed.pmtiles');
    writePmtilesFile(file, tiles, opts);
    assert.ok(readFileSync(file).equals(buildPmtiles(tiles, opts)));
    assert.ok(!existsSync(`${file}.data`), 'the data file is removed');
    assert.throws(() => writePmtilesFile(file, [...tiles].reverse(), opts), /out of tile-id order/);
  });

  it('refuses a tile given twice and an empty tile', () => {
    assert.throws(() => buildPmtiles([{ z: 0, x: 0, y: 0, data: Buffer.from('a') }, { z: 0, x: 0, y: 0, data: Buffer.from('b') }], OPTIONS), /given twice/);
    assert.throws(() => buildPmtiles([{ z: 0, x: 0, y: 0, data: new Uint8Array(0) }], OPTIONS), /empty/);
  });
});
