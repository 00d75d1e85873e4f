// `tileserver-ts mbtiles VERB ...` and `tileserver-ts convert IN OUT` (docs/mbtiles.md): martin's `mbtiles` verbs
// on the same files. Results on stdout, progress on a terminal's stderr, a refusal as one line on stderr.
// Exit status: 0 done (validate: valid), 1 refused (bad input, wrong base, damaged file), 2 a usage mistake.
import { AGG, MbtilesError, metaGet, metaSet, openArchive, sqliteProblem } from '../mbtiles/archive.js';
import { applyPatch } from '../mbtiles/apply-patch.js';
import { copy } from '../mbtiles/copy.js';
import { diff } from '../mbtiles/diff.js';
import { progress } from '../mbtiles/progress.js';
import { summary, summaryText } from '../mbtiles/summary.js';
import { validate } from '../mbtiles/validate.js';
import { parseMbtilesArgs, type MbtilesCommand } from './mbtiles-args.js';

export const MBTILES_USAGE = `Usage:
  tileserver-ts mbtiles validate FILE [--update]      check the file; print its agg_tiles_hash (--update writes it)
  tileserver-ts mbtiles diff OLD NEW DIFF [--force]    write DIFF, which turns OLD into NEW
  tileserver-ts mbtiles apply-patch BASE DIFF [OUT] [--force]
                                                      apply DIFF to BASE in place, or to a copy at OUT
  tileserver-ts mbtiles copy SRC... DST [--min-zoom N] [--max-zoom N] [--bbox W,S,E,N]...
                [--on-duplicate override|ignore|abort] [--dst-type flat|flat-with-hash|normalized]
  tileserver-ts mbtiles meta-get FILE KEY             print a metadata value
  tileserver-ts mbtiles meta-set FILE KEY [VALUE]     set a metadata value (no VALUE: remove it)
  tileserver-ts mbtiles summary FILE                  tiles and bytes per zoom
  tileserver-ts convert IN OUT [--dst-type SCHEMA]    MBTiles to PMTiles or back (by the names' extensions)
Files are martin's (flat, flat-with-hash, normalized); diffs made by either tool apply with the other.
Exit status: 0 done, 1 refused (bad or damaged input, a diff of another base), 2 a usage mistake.
`;

function run(c: MbtilesCommand): Promise<string> | string {
  const bar = progress();
  switch (c.verb) {
    case 'validate': {
      const a = openArchive(c.file, c.update);
      try {
        const v = validate(a, c.update, bar);
        return `${v.computed}\n`;
      } finally {
        a.db.close();
      }
    }
    case 'diff': {
      const d = diff(c.old, c.new, c.diff, c.force, bar);
      return `${c.diff}: ${d.changed} tiles new or changed, ${d.deleted} deleted; ${d.before} -> ${d.after}\n`;
    }
    case 'apply-patch': {
      const p = applyPatch(c.base, c.diff, c.out, c.force);
      return `${c.out ?? c.base}: ${p.written} tiles written, ${p.deleted} deleted; agg_tiles_hash ${p.after ?? 'none'}\n`;
    }
    case 'copy': {
      const r = copy(c.sources, c.dst, c, bar);
      return `${c.dst}: ${r.tiles} tiles; agg_tiles_hash ${r.hash}\n`;
    }
    case 'meta-get': {
      const a = openArchive(c.file);
      try {
        const v = metaGet(a.db, c.key);
        if (v === undefined) throw new MbtilesError(`${c.file}: no metadata ${JSON.stringify(c.key)}`);
        return `${v}\n`;
      } finally {
        a.db.close();
      }
    }
    case 'meta-set': {
      if (c.key === AGG && c.value !== undefined) throw new MbtilesError(`${AGG} is written by validate --update, from the tiles`);
      const a = openArchive(c.file, true);
      try {
        metaSet(a.db, c.key, c.value);
        return '';
      } finally {
        a.db.close();
      }
    }
    case 'summary': {
      const a = openArchive(c.file);
      try {
        return summaryText(c.file, summary(a));
      } finally {
        a.db.close();
      }
    }
    case 'convert':
      // Loaded only here: the PMTiles reader and writer (pmtiles, fflate, the seed's writer and its logging) were a
      // third of the start of every other verb, where a patch of a 1 GB archive takes under a second.
      return import('../mbtiles/convert.js').then(({ convert }) => convert(c.input, c.output, c.dstType, bar)).then((n) => `${c.output}: ${n} tiles\n`);
  }
}

/** `argv` after `mbtiles`, or `['convert', ...]` for `tileserver-ts convert`. */
export async function runMbtilesCommand(argv: readonly string[]): Promise<number> {
  const name = argv[0] === 'convert' ? 'convert' : 'mbtiles';
  const args = parseMbtilesArgs(argv);
  if (args.verb === 'help') {
    process.stdout.write(MBTILES_USAGE);
    return 0;
  }
  if (args.verb === 'usage') {
    process.stderr.write(`tileserver-ts ${name}: ${args.message} (see tileserver-ts ${name} --help)\n`);
    return 2;
  }
  try {
    process.stdout.write(await run(args));
    return 0;
  } catch (err) {
    const e = err instanceof MbtilesError ? err : sqliteProblem('mbtiles', err);
    // On a terminal the progress line is cleared first, so the refusal stands alone.
    process.stderr.write(`${process.stderr.isTTY ? '\r\x1b[K' : ''}tileserver-ts ${name} ${args.verb}: ${e.message.split('\n')[0]}\n`);
    return e.exitCode;
  }
}
