// Finding and ending the browsers this process started, by a marker argument on their command line.
// A render thread that is terminated (a hung render) cannot close its browser itself: the pool kills it from
// the main thread instead. Playwright starts each browser as the leader of its own process group, so one
// signal to the group ends the browser with its GPU, zygote and page processes.
import { readdir, readFile } from 'node:fs/promises';

/** The command-line switch that names a renderer's browser; Chromium ignores switches it does not know. */
export const MARKER_SWITCH = '--tileserver-ts-renderer=';

/**
 * Process ids whose command line carries a marker starting with `prefix`, or equal to it when `exact` (Linux
 * /proc; elsewhere none).
 */
export async function pidsWithMarker(prefix: string, exact = false): Promise<number[]> {
  let entries: string[];
  try {
    entries = await readdir('/proc');
  } catch {
    return [];
  }
  const needle = MARKER_SWITCH + prefix;
  const found: number[] = [];
  await Promise.all(
    entries
      .filter((e) => /^\d+$/.test(e))
      .map(async (e) => {
        try {
          const cmdline = await readFile(`/proc/${e}/cmdline`, 'utf8');
          if (cmdline.split('\0').some((arg) => (exact ? arg === needle : arg.startsWith(needle)))) found.push(Number(e));
        } catch {
          /* the process ended while we looked */
        }
      }),
  );
  return found;
}

/**
 * Ends the browsers whose marker starts with `prefix` (is `prefix`, when `exact`), with their whole process
 * groups. Returns how many.
 */
export async function killMarked(prefix: string, exact = false): Promise<number> {
  const pids = await pidsWithMarker(prefix, exact);
  for (const pid of pids) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }
  return pids.length;
}
