// The human-readable form of a pino JSON line: `2026-11-23 21:40:12.345 INFO  message key=value ...`, the time
// in the machine's local zone. Colours only when stderr is a terminal (NO_COLOR respected).

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const COLOURS: Record<number, string> = { 10: '90', 20: '36', 30: '32', 40: '33', 50: '31', 60: '35' };
/** Fields every line has or that the line shows in its own place. */
const SHOWN_APART = new Set(['level', 'time', 'msg', 'pid', 'hostname']);

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** Local date and time with milliseconds. */
export function localTime(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

/** A value as `key=value`: plain when it is one word, JSON (quoted, escaped) otherwise. */
function field(key: string, value: unknown): string {
  if (typeof value === 'string') return `${key}=${/^[^\s"=]+$/.test(value) ? value : JSON.stringify(value)}`;
  if (value !== null && typeof value === 'object') {
    // An error object: its message, and its stack on the following lines (an error worth a stack is worth reading).
    const err = value as { message?: unknown; stack?: unknown };
    if (typeof err.stack === 'string') return `${key}=${JSON.stringify(err.message ?? '')}\n${err.stack}`;
  }
  return `${key}=${JSON.stringify(value)}`;
}

const useColour = process.stderr.isTTY === true && !process.env.NO_COLOR;

export function prettyLine(jsonLine: string, colour = useColour): string {
  let rec: Record<string, unknown>;
  try {
    rec = JSON.parse(jsonLine) as Record<string, unknown>;
  } catch {
    return jsonLine;
  }
  const level = typeof rec.level === 'number' ? rec.level : 30;
  const name = (LEVELS[level] ?? String(level)).padEnd(5);
  const time = typeof rec.time === 'number' ? localTime(rec.time) : '';
  const extra = Object.entries(rec)
    .filter(([k]) => !SHOWN_APART.has(k))
    .map(([k, v]) => field(k, v));
  const levelText = colour ? `\x1b[${COLOURS[level] ?? '0'}m${name}\x1b[0m` : name;
  return `${time} ${levelText} ${String(rec.msg ?? '')}${extra.length ? ` ${extra.join(' ')}` : ''}\n`;
}
