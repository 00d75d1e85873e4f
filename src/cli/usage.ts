// The top-level help and the one-line usage error, shared by the dispatch in cli.ts and the server's start
// (cli/serve.ts). Kept apart from both so that `tileserver-ts --help` loads nothing else.
import { AUTO_CONFIG_FILES } from './args.js';

export const USAGE = `Usage:
  tileserver-ts --config FILE          serve what a TOML configuration file describes
  tileserver-ts PATH|URL ...           serve archives with default settings: FILE.pmtiles, FILE.mbtiles,
                                       a folder (every .pmtiles and .mbtiles in it), a PMTiles URL:
                                       http(s)://, s3://bucket/key, gs://bucket/key or az://container/blob
                                       (credentials from each provider's standard environment variables)
  tileserver-ts                        serve ${AUTO_CONFIG_FILES.join(' or ')} from the working directory
  tileserver-ts mcp-stdio [--config FILE | PATH|URL ...]
                                       the MCP tools over stdin/stdout for a local agent (docs/mcp.md)
  tileserver-ts key new [--name NAME]  a new API key and the [[auth.keys]] entry with its hash (docs/access.md)
  tileserver-ts seed --config FILE ...  render or copy the tiles of an area into a PMTiles/MBTiles archive
                                       or into the caches (tileserver-ts seed --help; docs/seeding.md)
  tileserver-ts mbtiles VERB ...       validate, diff, apply-patch, copy, meta-get, meta-set, summary of MBTiles
                                       files, as martin's mbtiles tool (tileserver-ts mbtiles --help; docs/mbtiles.md)
  tileserver-ts convert IN OUT         MBTiles to PMTiles or back, streaming, with the metadata
  tileserver-ts expire --admin URL --source ID [FILE|-]
                                       send an expire list to a running server's admin listener
                                       (tileserver-ts expire --help; docs/live-data.md)
Options:
  -c, --config FILE   configuration file (TOML)
      --host HOST     listen address (overrides server.host)
  -p, --port PORT     listen port (overrides server.port)
      --workers N     HTTP worker processes, or "auto" (overrides server.workers)
  -h, --help          show this help
  -v, --version       print the version
Environment: LOG_LEVEL (default info), LOG_FORMAT (json or pretty; default pretty on a terminal)
`;

/** A usage error: one line and a pointer to the help, exit 2. */
export function usageError(message: string): never {
  process.stderr.write(`tileserver-ts: ${message} (see tileserver-ts --help)\n`);
  process.exit(2);
}
