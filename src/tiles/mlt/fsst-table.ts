// Learning an FSST symbol table. @maplibre/mlt ships the FSST coder (`encodeFsst`) but expects the symbol table
// to be given; this builds one the way FSST does: a few rounds of compressing a sample with the current table,
// counting how much each symbol, and each pair of adjacent symbols joined into one, would save, and keeping the
// 255 best (code 255 is the escape for a literal byte).

const MAX_SYMBOLS = 255;
// FSST allows 8-byte symbols; 6 keeps a symbol and its length in one exact number (a fast map key).
const MAX_SYMBOL_LENGTH = 6;
const ROUNDS = 4;
/** Training looks at this many bytes at most; the table of a larger dictionary is learnt from its start. */
const SAMPLE_BYTES = 8 * 1024;

/** A symbol table as matched while training: candidates per first byte, longest first. */
class Table {
  readonly byFirst: Uint8Array[][] = Array.from({ length: 256 }, () => []);
  constructor(readonly symbols: Uint8Array[]) {
    for (const s of symbols) this.byFirst[s[0]].push(s);
    for (const list of this.byFirst) list.sort((a, b) => b.length - a.length);
  }

  /** Length of the longest symbol matching `data` at `at`, 0 when none does. */
  match(data: Uint8Array, at: number, end: number): number {
    for (const s of this.byFirst[data[at]]) {
      if (at + s.length > end) continue;
      let ok = true;
      for (let k = 1; k < s.length; k++) {
        if (data[at + k] !== s[k]) {
          ok = false;
          break;
        }
      }
      if (ok) return s.length;
    }
    return 0;
  }
}

const BYTE_SPAN = 2 ** 48;

/** Bytes `at`..`at+len` (len ≤ 6) and the length packed into one number below 2^53. */
function key(data: Uint8Array, at: number, len: number): number {
  let k = 0;
  for (let i = len - 1; i >= 0; i--) k = k * 256 + data[at + i];
  return len * BYTE_SPAN + k;
}

function symbolOf(k: number): Uint8Array {
  const len = Math.floor(k / BYTE_SPAN);
  let rest = k - len * BYTE_SPAN;
  const out = new Uint8Array(len);
  for (let i = 0; i < len; i++) {
    out[i] = rest % 256;
    rest = Math.floor(rest / 256);
  }
  return out;
}

export interface SymbolTable {
  symbols: Uint8Array[];
  /** Compressed bytes per input byte on the training sample with the final table: the caller's size estimate. */
  ratio: number;
}

/** Learns up to 255 symbols (1–6 bytes) from `data`, the concatenated dictionary. */
export function learnSymbols(data: Uint8Array): SymbolTable {
  const sample = data.length > SAMPLE_BYTES ? data.subarray(0, SAMPLE_BYTES) : data;
  let table = new Table([]);
  for (let round = 0; round < ROUNDS; round++) {
    const gains = new Map<number, number>();
    const add = (k: number, n: number) => gains.set(k, (gains.get(k) ?? 0) + n);
    let at = 0;
    let prevAt = -1;
    let prevLen = 0;
    while (at < sample.length) {
      const len = table.match(sample, at, sample.length) || 1;
      // A symbol's gain is the bytes it replaces by one code; a literal costs two codes, so it gains nothing
      // but must stay a candidate to be joined.
      add(key(sample, at, len), len);
      if (prevAt >= 0 && prevLen + len <= MAX_SYMBOL_LENGTH) add(key(sample, prevAt, prevLen + len), prevLen + len);
      prevAt = at;
      prevLen = len;
      at += len;
    }
    const best = [...gains].sort((a, b) => b[1] - a[1]).slice(0, MAX_SYMBOLS);
    table = new Table(best.map(([k]) => symbolOf(k)));
  }
  let codes = 0;
  for (let at = 0; at < sample.length; ) {
    const len = table.match(sample, at, sample.length);
    codes += len ? 1 : 2;
    at += len || 1;
  }
  return { symbols: table.symbols, ratio: sample.length ? codes / sample.length : 1 };
}
