// An archive server whose tile data a test can hold back: a render needing a tile then waits exactly as long as
// the test says, whatever the machine's speed (render-limits and render-bounds keep a renderer busy with it).
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * An HTTP server of one PMTiles archive (byte ranges, as object storage answers them) that can hold back every
 * request for tile data until released: a render needing a tile then waits exactly as long as the test says,
 * whatever the machine's speed. The header, directories and metadata are always answered.
 */
export interface HoldServer {
  url: string;
  /** Tile-data requests waiting now. */
  held(): number;
  hold(on: boolean): void;
  close(): Promise<void>;
}

export async function startHoldServer(file: string): Promise<HoldServer> {
  const bytes = readFileSync(file);
  // PMTiles v3 header: the tile data section's offset is the little-endian u64 at byte 56.
  const tileData = Number(bytes.readBigUInt64LE(56));
  let holding = false;
  const waiting: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (!m) return void res.writeHead(200, { 'Content-Length': bytes.length }).end(bytes);
    const [start, end] = [Number(m[1]), Math.min(bytes.length - 1, Number(m[2]))];
    const answer = () => {
      if (res.destroyed) return;
      res.writeHead(206, { 'Content-Length': end - start + 1, 'Content-Range': `bytes ${start}-${end}/${bytes.length}`, 'Accept-Ranges': 'bytes' }).end(bytes.subarray(start, end + 1));
    };
    if (holding && start >= tileData) waiting.push(answer);
    else answer();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const release = () => {
    for (const answer of waiting.splice(0)) answer();
  };
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/${path.basename(file)}`,
    held: () => waiting.length,
    hold(on) {
      holding = on;
      if (!on) release();
    },
    close: () =>
      new Promise<void>((resolve) => {
        release();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * TOML of a style `stall` (a background and the water of the archive at `holdUrl`) and its source `remote`:
 * appended to a configuration, a render of `stall` waits for as long as the hold server holds its tiles.
 */
export function stallToml(holdUrl: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-stall-'));
  const style = path.join(dir, 'stall.json');
  writeFileSync(
    style,
    JSON.stringify({
      version: 8,
      name: 'stall',
      sources: { omt: { type: 'vector', url: 'pmtiles://remote' } },
      layers: [
        { id: 'bg', type: 'background', paint: { 'background-color': '#336699' } },
        { id: 'water', type: 'fill', source: 'omt', 'source-layer': 'water', paint: { 'fill-color': '#0000ff' } },
      ],
    }),
  );
  return `\n[[styles]]\nid = "stall"\npath = "${style}"\n[[sources]]\nid = "remote"\ntype = "pmtiles"\npath = "${holdUrl}"\n`;
}
