// `tileserver-ts seed`: the command's help, its arguments, and how its outcomes become exit codes (2 for a
// mistake in what was asked, 1 for a run that could not be done or had failed tiles, 130/143 after a signal).
import { loadConfigFile } from '../config/load.js';
import { ConfigError } from '../config/errors.js';
import { log } from '../log.js';
import { CoverageError } from '../seed/coverage.js';
import { OutputError, OutputExistsError } from '../seed/outputs.js';
import { runSeed, SeedRunError, SeedUsageError } from '../seed/runner.js';
import { SourceOpenError } from '../sources/source.js';
import { parseSeedArgs } from './seed-args.js';

export const SEED_USAGE = `Usage:
  tileserver-ts seed --config FILE (--style ID | --source ID) (--bbox W,S,E,N | --geojson FILE) --zoom MIN-MAX
                     (--out FILE.pmtiles|FILE.mbtiles | --warm) [options]
Renders (a style) or reads (a source) every tile of the area and zoom range through the service's own code,
with the configuration's render pool, settings and caches, into a new archive (--out) or into the render cache
and the shared cache (--warm). docs/seeding.md has the details.
Options:
  --style ID | --source ID   raster renders of a style, or the tiles of a source
  --bbox W,S,E,N             the area in degrees, or
  --geojson FILE             the tiles touching the geometries of a GeoJSON file
  --zoom MIN-MAX             zoom range (or one zoom), 0..22
  --format F                 png, jpg or webp for a style (default png); pbf, mlt, png, jpg or webp for a
                             source (default: its own)
  --scale 1|2|3              pixel ratio of rendered tiles (default 1)
  --tile-size 256|512        rendered tile size (default 512)
  --out FILE                 write a .pmtiles or .mbtiles archive (made under FILE.partial, renamed at the end)
  --warm                     only fill the caches, write no archive
  --concurrency N            tiles asked for at once (default 8)
  --resume                   keep what FILE (or FILE.partial) holds and add the missing tiles
  --keep-empty               write empty vector tiles too (default: left out)
  --dry-run                  print how many tiles each zoom has and stop
`;

export async function runSeedCommand(argv: readonly string[]): Promise<number> {
  const args = parseSeedArgs(argv);
  if (args.kind === 'help') {
    process.stdout.write(SEED_USAGE);
    return 0;
  }
  if (args.kind === 'usage') {
    process.stderr.write(`tileserver-ts seed: ${args.message} (see tileserver-ts seed --help)\n`);
    return 2;
  }
  // Only warnings and worse unless LOG_LEVEL asks: a renderer's info lines would break the progress bar.
  if (process.env.LOG_LEVEL === undefined) log.level = 'warn';
  try {
    const loaded = loadConfigFile(args.config);
    for (const w of loaded.warnings) log.warn(w);
    const tty = process.stderr.isTTY === true;
    return await runSeed(args, loaded, log, {
      stdout: { write: (t) => void process.stdout.write(t) },
      stderr: { write: (t) => void process.stderr.write(t) },
      tty,
      // 0 under a pseudo-terminal that was given no size: the reporter's default width then.
      columns: process.stderr.columns || undefined,
    });
  } catch (err) {
    if (err instanceof SeedUsageError || err instanceof CoverageError || err instanceof OutputExistsError) {
      process.stderr.write(`tileserver-ts seed: ${err.message}\n`);
      return 2;
    }
    if (err instanceof ConfigError || err instanceof SourceOpenError || err instanceof SeedRunError || err instanceof OutputError) {
      process.stderr.write(`tileserver-ts seed: ${err.message}\n`);
      return 1;
    }
    throw err;
  }
}
