// Tile formats: what the bytes are, what a URL extension asks for, and the Content-Type of each.

/** The formats a tile may be stored or served in. `pbf` is Mapbox Vector Tile (MVT); `mlt` is MapLibre Tile. */
export type TileFormat = 'pbf' | 'mlt' | 'png' | 'jpg' | 'webp';
/** How stored tile bytes are compressed. */
export type StoredCompression = 'gzip' | 'none';

export const VECTOR_FORMATS: ReadonlySet<TileFormat> = new Set(['pbf', 'mlt']);
export const isVector = (f: TileFormat) => VECTOR_FORMATS.has(f);

export const CONTENT_TYPES: Record<TileFormat, string> = {
  pbf: 'application/x-protobuf',
  mlt: 'application/vnd.open-vector-tile',
  png: 'image/png',
  jpg: 'image/jpeg',
  webp: 'image/webp',
};

/** URL extensions accepted on `/data/{id}/{z}/{x}/{y}.{ext}`; `jpeg` is an alias of `jpg`, `mvt` of `pbf`. */
export function formatFromExtension(ext: string): TileFormat | undefined {
  switch (ext) {
    case 'pbf':
    case 'mvt':
      return 'pbf';
    case 'mlt':
      return 'mlt';
    case 'png':
      return 'png';
    case 'jpg':
    case 'jpeg':
      return 'jpg';
    case 'webp':
      return 'webp';
    default:
      return undefined;
  }
}

/** Maps a metadata format string (MBTiles `format`, PMTiles tile type names) to a TileFormat. */
export function formatFromMetadata(name: string | undefined): TileFormat | undefined {
  switch ((name ?? '').toLowerCase()) {
    case 'pbf':
    case 'mvt':
    case 'application/x-protobuf':
    case 'application/vnd.mapbox-vector-tile':
      return 'pbf';
    case 'mlt':
      return 'mlt';
    case 'png':
      return 'png';
    case 'jpg':
    case 'jpeg':
      return 'jpg';
    case 'webp':
      return 'webp';
    default:
      return undefined;
  }
}

export const isGzip = (b: Uint8Array) => b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b;

/**
 * Recognises image formats by magic number. Vector tiles have none: an MVT is a protobuf message whose
 * fields are layers (tag 0x1a = field 3, length-delimited); an MLT starts with a varint-sized layer block.
 * Returns undefined for bytes that are not a recognisable image (the caller then trusts the metadata).
 */
export function sniffImage(b: Uint8Array): 'png' | 'jpg' | 'webp' | undefined {
  if (b.length >= 8 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) return 'png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpg';
  if (b.length >= 12 && b[0] === 0x52 && b[1] === 0x49 && b[2] === 0x46 && b[3] === 0x46 && b[8] === 0x57 && b[9] === 0x45 && b[10] === 0x42 && b[11] === 0x50) return 'webp';
  return undefined;
}

/** The width in pixels of a PNG or WebP image read from its header (no decoding), or undefined for other bytes. */
export function imageWidth(b: Uint8Array): number | undefined {
  const image = sniffImage(b);
  if (image === 'png' && b.length >= 24) return ((b[16] << 24) | (b[17] << 16) | (b[18] << 8) | b[19]) >>> 0;
  if (image !== 'webp' || b.length < 30) return undefined;
  const chunk = String.fromCharCode(b[12], b[13], b[14], b[15]);
  // Lossy: a 14-bit width after the frame tag and start code; lossless: 14 bits of width - 1 after the signature;
  // extended: the canvas width - 1 in 24 bits.
  if (chunk === 'VP8 ') return ((b[27] << 8) | b[26]) & 0x3fff;
  if (chunk === 'VP8L') return 1 + (((b[22] & 0x3f) << 8) | b[21]);
  if (chunk === 'VP8X') return 1 + (b[24] | (b[25] << 8) | (b[26] << 16));
  return undefined;
}

/** True when uncompressed bytes look like an MVT: a sequence of field-3 (layers) length-delimited entries. */
export function looksLikeMvt(b: Uint8Array): boolean {
  return b.length === 0 || b[0] === 0x1a;
}

/**
 * Checks stored bytes against the format the metadata declares. Images must carry their magic number;
 * vector tiles must not be images. Used at open time on a sample tile, so a mislabelled archive is caught
 * before it serves garbage with the wrong Content-Type.
 */
export function bytesMatchFormat(declared: TileFormat, bytes: Uint8Array): boolean {
  const image = sniffImage(bytes);
  if (declared === 'pbf' || declared === 'mlt') return image === undefined;
  return image === declared;
}
