#!/usr/bin/env node
// Command line: `tileserver-ts --config FILE`, `tileserver-ts ARCHIVE|FOLDER|URL ...`, or nothing (a config.toml
// in the working directory). Usage errors are one line and exit 2; start-up failures one line and exit 1.
// Each subcommand's modules are imported when it is chosen, not here: the server's (Hono, sharp, the sources,
// the renderer pool...) took about 1 s and 80 MB of every `tileserver-ts mbtiles` run on a busy machine, which a
// diff or patch that finishes in a second cannot afford. esbuild splits dist/ along these imports.
import cluster from 'node:cluster';
import { parseArgs } from './cli/args.js';
import { USAGE, usageError } from './cli/usage.js';
import { VERSION } from './version.js';

/** A subcommand's exit: once stdout has taken the last line (a pipe may still hold it); handles a closed renderer
 * pool or cache client leave behind must not keep the command alive. */
const exitWith = (code: number) => void process.stdout.write('', () => process.exit(code));

async function main(): Promise<void> {
  if (cluster.isWorker) return (await import('./cluster/worker.js')).runWorker();
  const argv = process.argv.slice(2);
  switch (argv[0]) {
    case 'seed':
      return exitWith(await (await import('./cli/seed.js')).runSeedCommand(argv.slice(1)));
    case 'expire':
      return exitWith(await (await import('./cli/expire.js')).runExpireCommand(argv.slice(1)));
    case 'mbtiles':
    case 'convert':
      return exitWith(await (await import('./cli/mbtiles.js')).runMbtilesCommand(argv[0] === 'convert' ? argv : argv.slice(1)));
    case 'key':
      return exitWith(await (await import('./cli/key.js')).runKeyCommand(argv.slice(1)));
  }
  const stdio = argv[0] === 'mcp-stdio';
  const args = parseArgs(stdio ? argv.slice(1) : argv);
  if (args.kind === 'help') return void process.stdout.write(USAGE);
  if (args.kind === 'version') return void process.stdout.write(`${VERSION}\n`);
  if (args.kind === 'usage') return usageError(args.message);
  const serve = await import('./cli/serve.js');
  await (stdio ? serve.runStdio(args) : serve.runServer(args));
}

main().catch(async (err: unknown) => {
  const { startupErrorLine } = await import('./cli/startup-error.js');
  process.stderr.write(`tileserver-ts: ${startupErrorLine(err)}\n`);
  process.exit(1);
});
