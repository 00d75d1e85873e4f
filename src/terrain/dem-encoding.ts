// Elevations as RGBA pixels, in the two encodings map clients decode on the GPU: Mapzen's terrarium and Mapbox's
// terrain-RGB (both understood by MapLibre's raster-dem source). Both pack a 24-bit integer into R, G and B;
// they differ only in offset and step. Alpha carries no-data, which neither encoding has a value for: a client
// that ignores alpha reads 0 m there, the least surprising height for a hole.

export type DemEncoding = 'terrarium' | 'mapbox';

interface Packing {
  /** Metres per step of the 24-bit integer. */
  step: number;
  /** Elevation of the integer 0, in metres. */
  offset: number;
}

const PACKING: Record<DemEncoding, Packing> = {
  terrarium: { step: 1 / 256, offset: -32768 },
  mapbox: { step: 0.1, offset: -10000 },
};

const MAX_CODE = 2 ** 24 - 1;

/** Smallest elevation difference each encoding can represent, in metres. */
export const DEM_PRECISION: Readonly<Record<DemEncoding, number>> = { terrarium: 1 / 256, mapbox: 0.1 };

/** Lowest and highest representable elevations of each encoding, in metres. */
export const DEM_RANGE: Readonly<Record<DemEncoding, readonly [number, number]>> = {
  terrarium: [PACKING.terrarium.offset, PACKING.terrarium.offset + MAX_CODE * PACKING.terrarium.step],
  mapbox: [PACKING.mapbox.offset, PACKING.mapbox.offset + MAX_CODE * PACKING.mapbox.step],
};

export function isDemEncoding(value: string): value is DemEncoding {
  return value === 'terrarium' || value === 'mapbox';
}

/**
 * Elevations (metres) as RGBA bytes, four per elevation: rounded to the encoding's step, clamped to its range.
 * NaN becomes 0 m with alpha 0; every other pixel is opaque.
 */
export function encodeDem(elevations: Float32Array, encoding: DemEncoding): Uint8Array {
  const { step, offset } = PACKING[encoding];
  const inverseStep = 1 / step;
  const zeroCode = Math.round(-offset * inverseStep);
  const out = new Uint8Array(elevations.length * 4);
  for (let i = 0, o = 0; i < elevations.length; i++, o += 4) {
    const e = elevations[i];
    let code: number;
    if (Number.isNaN(e)) code = zeroCode;
    else {
      code = Math.round((e - offset) * inverseStep);
      // Comparisons rather than Math.min/max: they also send ±Infinity to the ends of the range.
      if (!(code > 0)) code = 0;
      else if (code > MAX_CODE) code = MAX_CODE;
    }
    out[o] = code >>> 16;
    out[o + 1] = (code >>> 8) & 0xff;
    out[o + 2] = code & 0xff;
    out[o + 3] = Number.isNaN(e) ? 0 : 255;
  }
  return out;
}

/** RGBA bytes back to elevations in metres; alpha 0 gives NaN (no data), any other alpha a height. */
export function decodeDem(rgba: Uint8Array, encoding: DemEncoding): Float32Array {
  if (rgba.length % 4 !== 0) throw new RangeError(`RGBA data must hold 4 bytes per pixel, got ${rgba.length} bytes`);
  const { step, offset } = PACKING[encoding];
  const out = new Float32Array(rgba.length / 4);
  for (let i = 0, o = 0; i < out.length; i++, o += 4) {
    out[i] = rgba[o + 3] === 0 ? NaN : offset + (rgba[o] * 65536 + rgba[o + 1] * 256 + rgba[o + 2]) * step;
  }
  return out;
}
