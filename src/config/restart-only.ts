// Settings a reload does not apply (spec, "Moves that need a restart"): the listeners' addresses, CORS and
// telemetry, plus what this implementation reads once when a process starts (the number of processes and their heap's
// young generation, the body timeout, the raster pool's sizing, the MCP endpoint and its OAuth server). A reload keeps the running values of these and reports the ones the file
// changed, so an operator learns that a restart is needed instead of wondering why nothing happened.
import type { Config } from './schema.js';

/** Key paths (as written in the TOML file) whose value only a restart changes. */
export const RESTART_ONLY_KEYS = [
  'server.host',
  'server.port',
  'server.admin_bind',
  'server.cors_origins',
  'server.workers',
  'server.request_timeout_ms',
  'server.max_header_bytes',
  'server.semi_space_mb',
  'telemetry',
  'raster.pool_size',
  'raster.max_queue_per_thread',
  'mcp',
] as const;

type Path = (typeof RESTART_ONLY_KEYS)[number];

function read(config: Config, key: Path): unknown {
  const [section, name] = key.split('.') as [keyof Config, string | undefined];
  const value = config[section] as Record<string, unknown> | undefined;
  return name === undefined ? value : value?.[name];
}

/** The restart-only keys whose values differ between the running configuration and a newly read one. */
export function restartOnlyChanges(running: Config, next: Config): string[] {
  const changed: string[] = [];
  for (const key of RESTART_ONLY_KEYS) {
    if (JSON.stringify(read(running, key)) !== JSON.stringify(read(next, key))) changed.push(key);
  }
  return changed;
}

/** `next` with the running values of every restart-only key: what a reload actually applies. */
export function keepRestartOnly(running: Config, next: Config): Config {
  const { host, port, admin_bind, cors_origins, workers, request_timeout_ms, max_header_bytes, semi_space_mb } = running.server;
  return {
    ...next,
    server: { ...next.server, host, port, admin_bind, cors_origins, workers, request_timeout_ms, max_header_bytes, semi_space_mb },
    telemetry: running.telemetry,
    mcp: running.mcp,
    raster: { ...next.raster, pool_size: running.raster.pool_size, max_queue_per_thread: running.raster.max_queue_per_thread },
  };
}
