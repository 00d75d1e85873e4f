// Serving a vector tile in the other vector format than the source stores (spec, format rules 2 and 3):
// `.pbf` of an MLT source and `.mlt` of an MVT source. A tile that cannot be transcoded is served as stored,
// with a warning in the log.
import type { AppState } from '../state/app-state.js';
import type { SourceInfo } from '../sources/source.js';
import type { ContentEncoding } from '../tiles/encoding.js';
import { HttpProblem } from '../problem.js';
import { log } from '../log.js';
import type { TileCoord } from '../tiles/coords.js';
import { runVector } from '../tiles/vector-work.js';

/**
 * The tile as `to` bytes in content encoding `encoding` (compressing a big tile costs tens of milliseconds, so it
 * happens beside the transcode, off the event loop), or undefined when transcoding failed (the caller then serves
 * the stored tile).
 */
export async function transcodeStored(
  state: AppState,
  info: SourceInfo,
  coord: TileCoord,
  stored: Uint8Array,
  to: 'pbf' | 'mlt',
  encoding: ContentEncoding,
): Promise<Uint8Array | undefined> {
  const from = info.format as 'pbf' | 'mlt';
  const c = state.config.compression;
  try {
    return await runVector({ op: 'transcode', input: { bytes: stored, format: from }, to, encoding, levels: { brQuality: c.br_quality, zstdLevel: c.zstd_level } }, state.config);
  } catch (err) {
    if (err instanceof HttpProblem) throw err;
    log.warn({ source: info.id, ...coord, from, to, reason: (err as Error).message }, 'tile transcoding failed; serving the stored tile unchanged');
    return undefined;
  }
}
