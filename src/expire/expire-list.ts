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

/** Keys appended one by one, the capacity doubled as needed (one copy per doubling). */
class KeyBuffer {
  private keys = new Float64Array(1024);
  length = 0;

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
    return unique(this.keys.subarray(0, this.length).sort());
  }
}

/**
 * Reads an expire list. `maxZoom` is the deepest zoom a line may name (the deepest zoom the sources are served
 * at, at most MAX_KEY_ZOOM). Resolves, once the stream has ended, with the tiles as sorted unique keys and the
 * tile lines read, or with the first bad line's number (from 1, blank lines counted) and what is wrong with it.
 * A failing stream rejects.
 */
export async function readExpireList(chunks: AsyncIterable<Uint8Array | string>, maxZoom = MAX_KEY_ZOOM): Promise<ExpireListResult> {
  const keys = new KeyBuffer();
  const limit = Math.min(maxZoom, MAX_KEY_ZOOM);
  let lineNo = 1;
  let lines = 0;
  // The line being read: its three numbers, how many slashes so far, digits in the current part, its length.
  const parts = [0, 0, 0];
  let part = 0;
  let digits = 0;
  let length = 0;
  let cr = false;
  let bad: string | undefined;

  const fail = (problem: string): ExpireListResult => ({ ok: false, line: lineNo, problem });
  /** Ends the current line: undefined when it was good (or blank), else the result to answer. */
  const endLine = (): ExpireListResult | undefined => {
    if (bad !== undefined) return fail(bad);
    if (length === 0) return undefined;
    if (part !== 2 || digits === 0) return fail('expected z/x/y (three whole numbers separated by "/")');
    const [z, x, y] = parts;
    if (z > limit) return fail(`zoom ${z} is deeper than ${limit}, the deepest zoom served here`);
    const n = 2 ** z;
    if (x >= n || y >= n) return fail(`tile ${z}/${x}/${y} is outside zoom ${z}, whose x and y go from 0 to ${n - 1}`);
    keys.push(tileKey(z, x, y));
    lines++;
    return undefined;
  };
  const reset = () => {
    parts[0] = parts[1] = parts[2] = 0;
    part = digits = length = 0;
    cr = false;
    bad = undefined;
  };

  let rejected: ExpireListResult | undefined;
  for await (const chunk of chunks) {
    // After a bad line the rest is read and dropped: a client that sends its whole body first (curl, fetch) still
    // gets the answer, and nothing of the list is kept.
    if (rejected) continue;
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    for (let i = 0; i < bytes.length; i++) {
      const b = bytes[i];
      if (b === LF) {
        rejected = endLine();
        if (rejected) break;
        lineNo++;
        reset();
        continue;
      }
      if (bad !== undefined) continue;
      if (cr) bad = 'a carriage return inside the line (lines end with LF or CRLF)';
      else if (++length > MAX_LINE_BYTES) bad = `longer than ${MAX_LINE_BYTES} bytes`;
      else if (b === CR) {
        cr = true;
        length--;
      } else if (b === SLASH) {
        if (digits === 0 || part === 2) bad = 'expected z/x/y (three whole numbers separated by "/")';
        else {
          part++;
          digits = 0;
        }
      } else if (b >= 0x30 && b <= 0x39) {
        // Eight digits reach every coordinate of zoom 24 (16777215); more is out of range whatever they say.
        if (++digits > 8) bad = 'a number with more than 8 digits';
        else parts[part] = parts[part] * 10 + (b - 0x30);
      } else {
        bad = `unexpected ${printable(b)} (expected z/x/y: digits and "/")`;
      }
    }
  }
  if (rejected) return rejected;
  const r = endLine();
  if (r) return r;
  return { ok: true, tiles: keys.sortedUnique(), lines };
}

/** A byte as a message shows it: the character when printable ASCII, else its code. */
function printable(b: number): string {
  return b > 0x20 && b < 0x7f ? `character ${JSON.stringify(String.fromCharCode(b))}` : `byte 0x${b.toString(16).padStart(2, '0')}`;
}
