// One pino logger per process, on stderr so stdout stays free for the CLI's own messages. JSON lines for log
// collectors; a human-readable line with the local time when stderr is a terminal or LOG_FORMAT=pretty.
import pino from 'pino';
import { prettyLine } from './log-format.js';

export type Logger = pino.Logger;

/** `LOG_FORMAT`: "json" or "pretty"; unset means pretty on a terminal, JSON otherwise. */
export function logFormat(env: NodeJS.ProcessEnv = process.env, isTty = process.stderr.isTTY === true): 'json' | 'pretty' {
  const asked = env.LOG_FORMAT?.toLowerCase();
  if (asked === 'json' || asked === 'pretty') return asked;
  return isTty ? 'pretty' : 'json';
}

function destination(): pino.DestinationStream {
  if (logFormat() === 'json') return pino.destination({ fd: 2, sync: false });
  // Pretty lines are for people watching a terminal: written as they come, each pino line formatted on its own.
  const out = pino.destination({ fd: 2, sync: true });
  return { write: (line: string) => void out.write(prettyLine(line)) };
}

export const log: Logger = pino({ level: process.env.LOG_LEVEL ?? 'info', base: { pid: process.pid } }, destination());
