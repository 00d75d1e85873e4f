// An expire list as osm2pgsql writes it (`expire_tiles` output, `-e`/`-o`): one `z/x/y` a line, any mix of zooms.
// Lists of millions of lines arrive as a stream; they are read chunk by chunk into a growing Float64Array of tile
// keys (8 bytes a tile, about 3 bytes a line of text), never into strings, and a line is never buffered: its
// digits are folded into numbers as they pass, so a 10 MB "line" costs nothing but its rejection. Every line is
// checked before anything is expired; the first bad one rejects the whole list (nothing half-applied).
//
// The accepted spelling: decimal digits `z/x/y`, lines ended by LF or CRLF, the last line's end optional. Blank
// lines (empty, or a lone CR) are skipped: shell pipelines and hand edits leave them, and they name no tile.
import { unique } from './area-times.js';
import { MAX_KEY_ZOOM, tileKey } from './tile-key.js';

/** The longest line read (bytes, its CR included): `24/16777215/16777215` is 20. */
export const MAX_LINE_BYTES = 64;

export type ExpireListResult =
  | { ok: true; tiles: Float64Array; lines: number }
  | { ok: false; line: number; problem: string };

const SLASH = 0x2f;
const CR = 0x0d;
const LF = 0x0a;

/** The fewest bytes a tile line takes (`0/0/0` and its line end): a list of n bytes has at most (n + 1) / 6 tiles. */
const MIN_LINE_BYTES = 6;

/** The most keys reserved from a size given in advance (128 MiB of address space); a longer list grows past it. */
const RESERVE_MAX_KEYS = 2 ** 24;

/**
 * Keys appended one by one, the capacity doubled as needed (one copy per doubling). A list whose size is known
 * (the request's Content-Length) reserves room for as many keys as it can hold at most, and never grows: a
 * zero-filled array's pages take memory only once written, so the room a list of long lines leaves unused costs
 * address space, not RSS, where doubling left the earlier arrays (as large as the last) as garbage.
 */
class KeyBuffer {
  private keys: Float64Array;
  length = 0;

  constructor(sizeBytes: number | undefined) {
    const most = sizeBytes !== undefined && Number.isSafeInteger(sizeBytes) && sizeBytes > 0 ? Math.floor((sizeBytes + 1) / MIN_LINE_BYTES) : 0;
    this.keys = new Float64Array(Math.max(1024, Math.min(most, RESERVE_MAX_KEYS)));
  }

  push(key: number): void {
    if (this.length === this.keys.length) {
      const grown = new Float64Array(this.keys.length * 2);
      grown.set(this.keys);
      this.keys = grown;
    }
    this.keys[this.length++] = key;
  }

  /** The keys sorted and without repeats (the buffer is given up). */
  sortedUnique(): Float64Array {
    const keys = this.keys.subarray(0, this.length);
    // Keys are non-negative doubles, whose bit patterns order as their values do: sorted as 64-bit integers,
    // a million keys take a fifth of the time Float64Array's own sort takes here (195 ms against 984 ms).
    new BigUint64Array(keys.buffer, keys.byteOffset, keys.length).sort();
    return unique(keys);
  }
}

/**
 * Reads an expire list. `maxZoom` is the deepest zoom a line may name (the deepest zoom the sources are served
 * at, at most MAX_KEY_ZOOM); `sizeBytes`, the list's length when it is known in advance (a hint: a list longer
 * or shorter reads the same). Resolves, once the stream has ended, with the tiles as sorted unique keys and the
 * tile lines read, or with the first bad line's number (from 1, blank lines counted) and what is wrong with it.
 * A failing stream rejects.
 */
export async function readExpireList(chunks: AsyncIterable<Uint8Array | string>, maxZoom = MAX_KEY_ZOOM, sizeBytes?: number): Promise<ExpireListResult> {
  const keys = new KeyBuffer(sizeBytes);
  const limit = Math.min(maxZoom, MAX_KEY_ZOOM);
  // The state of the line being read, in locals (a closure over them made the loop several times slower):
  // its number, its three numbers so far, which of them is being read, its digits, its length, a CR seen.
  let lineNo = 1;
  let lines = 0;
  let z = 0;
  let x = 0;
  let y = 0;
  let part = 0;
  let digits = 0;
  let length = 0;
  let cr = false;
  let bad: string | undefined;
  let rejected: ExpireListResult | undefined;
  for await (const chunk of chunks) {
    // After a bad line the rest is read and dropped: a client that sends its whole body first (curl, fetch) still
    // gets the answer, and nothing of the list is kept.
    if (rejected) continue;
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i];
      if (b === LF) {
        if (bad === undefined && length > 0) bad = tileProblem(part, digits, z, x, y, limit);
        if (bad !== undefined) {
          rejected = { ok: false, line: lineNo, problem: bad };
          break;
        }
        if (length > 0) {
          keys.push(tileKey(z, x, y));
          lines++;
        }
        lineNo++;
        z = x = y = part = digits = length = 0;
        cr = false;
        continue;
      }
      if (bad !== undefined) continue;
      if (cr) bad = 'a carriage return inside the line (lines end with LF or CRLF)';
      else if (++length > MAX_LINE_BYTES) bad = `longer than ${MAX_LINE_BYTES} bytes`;
      else if (b >= 0x30 && b <= 0x39) {
        // Eight digits reach every coordinate of zoom 24 (16777215); more is out of range whatever they say.
        if (++digits > 8) bad = 'a number with more than 8 digits';
        else if (part === 0) z = z * 10 + (b - 0x30);
        else if (part === 1) x = x * 10 + (b - 0x30);
        else y = y * 10 + (b - 0x30);
      } else if (b === SLASH) {
        if (digits === 0 || part === 2) bad = 'expected z/x/y (three whole numbers separated by "/")';
        else {
          part++;
          digits = 0;
        }
      } else if (b === CR) {
        cr = true;
        length--;
      } else {
        bad = `unexpected ${printable(b)} (expected z/x/y: digits and "/")`;
      }
    }
  }
  if (rejected) return rejected;
  // The last line, when the list does not end with a line end.
  if (bad === undefined && length > 0) bad = tileProblem(part, digits, z, x, y, limit);
  if (bad !== undefined) return { ok: false, line: lineNo, problem: bad };
  if (length > 0) {
    keys.push(tileKey(z, x, y));
    lines++;
  }
  return { ok: true, tiles: keys.sortedUnique(), lines };
}

/** What is wrong with a complete non-blank line, or undefined when it names a tile of zoom 0..limit. */
function tileProblem(part: number, digits: number, z: number, x: number, y: number, limit: number): string | undefined {
  if (part !== 2 || digits === 0) return 'expected z/x/y (three whole numbers separated by "/")';
  if (z > limit) return `zoom ${z} is deeper than ${limit}, the deepest zoom served here`;
  const n = 2 ** z;
  if (x >= n || y >= n) return `tile ${z}/${x}/${y} is outside zoom ${z}, whose x and y go from 0 to ${n - 1}`;
  return undefined;
}

/** A byte as a message shows it: the character when printable ASCII, else its code. */
function printable(b: number): string {
  return b > 0x20 && b < 0x7f ? `character ${JSON.stringify(String.fromCharCode(b))}` : `byte 0x${b.toString(16).padStart(2, '0')}`;
}
