// The Node flags a forked worker starts with. A worker's requests make many short-lived objects (a tile's decoded
// features, its clipped geometry, the encoder's buffers); with Node's default young generation (16 MiB semi-spaces)
// under concurrent requests many of them are still alive at a scavenge, so they are copied, promoted and later
// collected again by the old generation's collector. A larger semi-space lets them die young: the data-file
// sources cut tiles about 1.5 times faster with 64 MiB (bench/RESULTS.md). A flag the operator gave node itself
// (on its command line or in NODE_OPTIONS) is theirs and wins.

const FLAG = '--max-semi-space-size';

/** Whether `args` (node's own arguments, or NODE_OPTIONS split on spaces) set the semi-space already. */
function setsSemiSpace(args: readonly string[]): boolean {
  return args.some((a) => a === FLAG || a.startsWith(`${FLAG}=`) || a === '--max_semi_space_size' || a.startsWith('--max_semi_space_size='));
}

/**
 * The execArgv of a forked worker: this process's own, plus the semi-space of `semiSpaceMb` (0: Node's own) unless
 * this process's arguments or `nodeOptions` (the NODE_OPTIONS a worker inherits) already set one.
 */
export function workerExecArgv(own: readonly string[], nodeOptions: string | undefined, semiSpaceMb: number): string[] {
  const args = [...own];
  if (semiSpaceMb > 0 && !setsSemiSpace(own) && !setsSemiSpace((nodeOptions ?? '').split(/\s+/))) args.push(`${FLAG}=${semiSpaceMb}`);
  return args;
}
