// The one line a failed start prints: a taken address, a bad configuration, a source that does not open or a
// worker that did not start in words; anything else with its stack. Loaded by cli.ts only once something failed.
import { ConfigError } from '../config/errors.js';
import { listenErrorLine } from '../cluster/listen-error.js';
import { WorkerStartError } from '../cluster/primary.js';
import { SourceOpenError } from '../sources/source.js';

export function startupErrorLine(err: unknown): string {
  const listenError = listenErrorLine(err);
  if (listenError) return listenError;
  if (err instanceof ConfigError || err instanceof SourceOpenError || err instanceof WorkerStartError) return err.message;
  return (err as Error)?.stack ?? String(err);
}
