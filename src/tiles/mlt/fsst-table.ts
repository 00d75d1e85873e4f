// Learning an FSST symbol table. @maplibre/mlt ships the FSST coder (`encodeFsst`) but expects the symbol table
// to be given; this builds one the way FSST does: a few rounds of compressing a sample with the current table,
// counting how much each symbol, and each pair of adjacent symbols joined into one, would save, and keeping the
// 255 best (code 255 is the escape for a literal byte).

const MAX_SYMBOLS = 255;
const MAX_SYMBOL_LENGTH = 8;
const ROUNDS = 5;
/** Training looks at this many bytes at most; the table of a larger dictionary is learnt from its start. */
const SAMPLE_BYTES = 16 * 1024;

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

const key = (data: Uint8Array, at: number, len: number): string => String.fromCharCode(...data.subarray(at, at + len));

/** Learns up to 255 symbols (1–8 bytes) from `data`, the concatenated dictionary. */
export function learnSymbols(data: Uint8Array): Uint8Array[] {
  const sample = data.length > SAMPLE_BYTES ? data.subarray(0, SAMPLE_BYTES) : data;
  let table = new Table([]);
  for (let round = 0; round < ROUNDS; round++) {
    const gains = new Map<string, number>();
    const add = (k: string, n: number) => gains.set(k, (gains.get(k) ?? 0) + n);
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
    const best = [...gains].filter(([k]) => k.length > 1 || gains.get(k)! > 2).sort((a, b) => b[1] - a[1]).slice(0, MAX_SYMBOLS);
    table = new Table(best.map(([k]) => Uint8Array.from(k, (c) => c.charCodeAt(0))));
  }
  return table.symbols;
}
