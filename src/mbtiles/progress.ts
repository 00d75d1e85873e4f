// Progress of a long verb on a terminal: one line on stderr, redrawn at most five times a second, cleared at the
// end. Nothing at all when stderr is not a terminal (a script's pipe or a log gets only the result).
export interface Progress {
  /** `done` of `total` units (rows, zoom levels) of the step named `what`. */
  tick(what: string, done: number, total: number): void;
  end(): void;
}

const SILENT: Progress = { tick: () => undefined, end: () => undefined };

export function progress(stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY) return SILENT;
  let last = 0;
  let shown = false;
  return {
    tick(what, done, total) {
      const now = Date.now();
      if (now - last < 200 && done < total) return;
      last = now;
      const share = total > 0 ? Math.min(1, done / total) : 0;
      const bar = '#'.repeat(Math.round(share * 24)).padEnd(24, '.');
      stream.write(`\r${what} [${bar}] ${done.toLocaleString('en')}/${total.toLocaleString('en')}\x1b[K`);
      shown = true;
    },
    end() {
      if (shown) stream.write('\r\x1b[K');
      shown = false;
    },
  };
}
