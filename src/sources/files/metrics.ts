// The memory file sources hold between requests, for the `file_source_memory_bytes` gauge (telemetry reads it
// when scraped). Keyed by the source object: during a reload the old and the new state's sources of one id both
// hold memory until the old state is closed, and both count.
const holders = new Map<object, { id: string; bytes: () => number }>();

export function trackMemory(owner: object, id: string, bytes: () => number): void {
  holders.set(owner, { id, bytes });
}

export function untrackMemory(owner: object): void {
  holders.delete(owner);
}

/** Bytes held per source id now. */
export function fileSourceMemory(): Map<string, number> {
  const out = new Map<string, number>();
  for (const h of holders.values()) out.set(h.id, (out.get(h.id) ?? 0) + h.bytes());
  return out;
}
