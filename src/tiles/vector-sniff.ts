// Tells MVT from MLT by the structure of uncompressed tile bytes. Neither has a magic number:
// an MVT is a protobuf message whose top-level fields are length-delimited layers (tag 0x1a);
// an MLT is a run of layer blocks, each a varint byte length followed by a body that starts with tag 1.
// A structure check that must account for every byte is very unlikely to pass for the other format.

function varint(b: Uint8Array, at: number): [value: number, next: number] | undefined {
  let value = 0;
  for (let shift = 0, i = at; i < b.length && shift < 35; shift += 7, i++) {
    value += (b[i] & 0x7f) * 2 ** shift;
    if (b[i] < 0x80) return [value, i + 1];
  }
  return undefined;
}

/** Every top-level field of a protobuf message is well-formed and at least one is an MVT layer (field 3). */
function isMvtStructure(b: Uint8Array): boolean {
  let at = 0;
  let layers = 0;
  while (at < b.length) {
    const key = varint(b, at);
    if (!key) return false;
    const [tag, next] = key;
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (field === 0) return false;
    if (wire === 2) {
      const len = varint(b, next);
      if (!len || len[1] + len[0] > b.length) return false;
      at = len[1] + len[0];
      if (field === 3) layers++;
    } else if (wire === 0) {
      const v = varint(b, next);
      if (!v) return false;
      at = v[1];
    } else if (wire === 1) at = next + 8;
    else if (wire === 5) at = next + 4;
    else return false;
  }
  return at === b.length && layers > 0;
}

/** Every byte belongs to a layer block whose body starts with the embedded-metadata tag (1). */
function isMltStructure(b: Uint8Array): boolean {
  let at = 0;
  while (at < b.length) {
    const len = varint(b, at);
    if (!len || len[0] === 0) return false;
    const [size, body] = len;
    if (body + size > b.length || b[body] !== 1) return false;
    at = body + size;
  }
  return b.length > 0;
}

/**
 * The vector format of uncompressed tile bytes, or undefined when they are neither. Empty bytes are a valid
 * (empty) MVT. MVT wins the (theoretical) tie: it is the format every client reads.
 */
export function sniffVectorFormat(raw: Uint8Array): 'pbf' | 'mlt' | undefined {
  if (raw.length === 0 || isMvtStructure(raw)) return 'pbf';
  if (isMltStructure(raw)) return 'mlt';
  return undefined;
}
