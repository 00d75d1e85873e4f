// One pino logger per process; JSON lines on stderr so stdout stays free for the CLI's own messages.
import pino from 'pino';

export type Logger = pino.Logger;

export const log: Logger = pino(
  { level: process.env.LOG_LEVEL ?? 'info', base: { pid: process.pid } },
  pino.destination({ fd: 2, sync: false }),
);
