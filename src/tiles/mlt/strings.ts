// String columns, in the smallest of three forms the format offers: plain (lengths and bytes per feature),
// dictionary (each distinct string once, features point at it) and FSST dictionary (the dictionary's bytes
// compressed with a learnt symbol table). Offsets and lengths go through the integer stream chooser.
import { encodeFsst } from '@maplibre/mlt/dist/encoding/fsstEncoder.js';
import { DictionaryType } from '@maplibre/mlt/dist/metadata/tile/dictionaryType.js';
import { LengthType } from '@maplibre/mlt/dist/metadata/tile/lengthType.js';
import { OffsetType } from '@maplibre/mlt/dist/metadata/tile/offsetType.js';
import { learnSymbols } from './fsst-table.js';
import { byteStream, concat, encodeIntStream, LENGTH_OPTIONS, PhysicalStreamType, presentStream, VALUE_OPTIONS, varint } from './streams.js';

/** Below this many dictionary bytes a symbol table (up to 255 symbols and their lengths) rarely pays for itself and for its learning. */
const FSST_MIN_BYTES = 1024;
/** FSST is kept only when estimated at most this fraction of the plain dictionary. */
const FSST_MAX_RATIO = 0.9;

const utf8 = new TextEncoder();

const lengthKind = (lengthType: LengthType) => ({ physical: PhysicalStreamType.LENGTH, logical: { lengthType } });
const dataKind = (dictionaryType: DictionaryType) => ({ physical: PhysicalStreamType.DATA, logical: { dictionaryType } });
const OFFSET_KIND = { physical: PhysicalStreamType.OFFSET, logical: { offsetType: OffsetType.STRING } };

function joined(parts: readonly Uint8Array[]): { bytes: Uint8Array; lengths: Uint32Array } {
  const lengths = Uint32Array.from(parts, (p) => p.length);
  return { bytes: concat(parts), lengths };
}

/** FSST-compressed dictionary streams, or undefined when the dictionary is too small to bother. */
function fsstStreams(dictionary: Uint8Array, lengths: Uint32Array): Uint8Array[] | undefined {
  if (dictionary.length < FSST_MIN_BYTES) return undefined;
  const { symbols, ratio } = learnSymbols(dictionary);
  if (symbols.length === 0) return undefined;
  const symbolLengths = Uint32Array.from(symbols, (s) => s.length);
  const table = concat(symbols);
  // The package's FSST coder tries every symbol at every byte, so it only runs when the estimate says the
  // compressed dictionary and its table beat the plain dictionary.
  if (ratio * dictionary.length + table.length + symbols.length >= dictionary.length * FSST_MAX_RATIO) return undefined;
  const compressed = encodeFsst(table, symbolLengths, dictionary);
  return [
    byteStream(dataKind(DictionaryType.FSST), table, symbols.length),
    encodeIntStream(lengthKind(LengthType.SYMBOL), symbolLengths, false, LENGTH_OPTIONS),
    encodeIntStream(lengthKind(LengthType.DICTIONARY), lengths, false, LENGTH_OPTIONS),
    byteStream(dataKind(DictionaryType.SINGLE), compressed, lengths.length),
  ];
}

export type StringForm = 'plain' | 'dictionary' | 'fsst';

/**
 * A string column, in the smallest form: stream count, then the streams (PRESENT first when some features lack
 * the value).
 */
export function stringColumn(values: readonly (string | null)[], nullable: boolean): { form: StringForm; data: Uint8Array } {
  const present: string[] = [];
  for (const v of values) if (v !== null) present.push(v);
  const head = nullable ? [presentStream(values.map((v) => v !== null))] : [];

  const plainParts = present.map((s) => utf8.encode(s));
  const plain = joined(plainParts);
  const plainStreams = [encodeIntStream(lengthKind(LengthType.VAR_BINARY), plain.lengths, false, LENGTH_OPTIONS), byteStream(dataKind(DictionaryType.NONE), plain.bytes, plain.lengths.length)];

  const index = new Map<string, number>();
  const offsets = new Uint32Array(present.length);
  const unique: Uint8Array[] = [];
  for (let i = 0; i < present.length; i++) {
    let at = index.get(present[i]);
    if (at === undefined) {
      at = unique.length;
      index.set(present[i], at);
      unique.push(plainParts[i]);
    }
    offsets[i] = at;
  }
  let best = plainStreams;
  let bestSize = size(plainStreams);
  let form: StringForm = 'plain';
  if (unique.length < present.length) {
    const dict = joined(unique);
    const offsetStream = encodeIntStream(OFFSET_KIND, offsets, false, VALUE_OPTIONS);
    const dictStreams = [offsetStream, encodeIntStream(lengthKind(LengthType.DICTIONARY), dict.lengths, false, LENGTH_OPTIONS), byteStream(dataKind(DictionaryType.SINGLE), dict.bytes, dict.lengths.length)];
    if (size(dictStreams) < bestSize) {
      form = 'dictionary';
      best = dictStreams;
      bestSize = size(dictStreams);
    }
    const fsst = fsstStreams(dict.bytes, dict.lengths);
    if (fsst) {
      const fsstDict = [offsetStream, ...fsst];
      if (size(fsstDict) < bestSize) {
        form = 'fsst';
        best = fsstDict;
        bestSize = size(fsstDict);
      }
    }
  } else {
    // All distinct: FSST can still compress the bytes, with an identity offset stream.
    const fsst = fsstStreams(plain.bytes, plain.lengths);
    if (fsst) {
      const fsstDict = [encodeIntStream(OFFSET_KIND, offsets, false, VALUE_OPTIONS), ...fsst];
      if (size(fsstDict) < bestSize) {
        form = 'fsst';
        best = fsstDict;
      }
    }
  }
  return { form, data: concat([varint(head.length + best.length), ...head, ...best]) };
}

function size(streams: readonly Uint8Array[]): number {
  let n = 0;
  for (const s of streams) n += s.length;
  return n;
}
