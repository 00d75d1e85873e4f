// The name of the record `tileserver-ts mbtiles apply-patch` leaves in a file it patched in place, shared by the
// writer (src/mbtiles/apply-patch.ts) and the reader (MbtilesSource.patchedFrom). A module of its own so that the
// CLI's patch does not load the tile source and what it imports (format sniffing, logging) for one string.

/**
 * The table holding the agg_tiles_hash before and after, and every tile position the patch wrote or deleted (one
 * row each). A server that served the file before expires exactly those tiles (expire/archives.ts); the record of
 * an earlier patch is replaced.
 */
export const PATCH_TABLE = 'tileserver_ts_patch';
