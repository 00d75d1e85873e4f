// What a seed is asked to do, as the command line gives it (src/cli/seed-args.ts parses it).

/** West, south, east, north in degrees. */
export type BBox = [number, number, number, number];

export type SeedFormat = 'png' | 'jpg' | 'webp' | 'pbf' | 'mlt';

export interface SeedRequest {
  config: string;
  /** What is seeded: raster renders of a style, or the tiles of a source (any format its routes serve). */
  target: { kind: 'style' | 'source'; id: string };
  /** Where: a bounding box, or the tiles touching the geometries of a GeoJSON file. */
  area: { kind: 'bbox'; bbox: BBox } | { kind: 'geojson'; file: string };
  minZoom: number;
  maxZoom: number;
  /** Absent: png for a style, the source's own format for a source. */
  format: SeedFormat | undefined;
  scale: 1 | 2 | 3;
  tileSize: 256 | 512;
  /** The archive written (.pmtiles or .mbtiles); absent with --warm or a bare --dry-run. */
  out: string | undefined;
  warm: boolean;
  /** Tiles asked for at once; absent: the runner's default. */
  concurrency: number | undefined;
  resume: boolean;
  dryRun: boolean;
  keepEmpty: boolean;
}

