// Usage per API key, for billing and for spotting a key that misbehaves: requests, body bytes sent, expensive
// answers (renders and the other routes of the expensive budget) and refusals (429), as counters of the process's
// pull registry (telemetry/prom.ts; summed over the workers of a machine on each scrape). Only when telemetry has
// a registry. The label is the key's configured name, never the key itself; names the configuration does not
// list (a JWT's subject, a key removed by a reload while its requests were in flight) are counted as `other`, and
// requests without credentials as `anonymous`, so no request can add a series (docs/metrics.md).
import { Counter } from 'prom-client';
import type { Principal } from '../auth/principal.js';
import type { AppState } from '../state/app-state.js';
import { telemetry } from '../telemetry/recorder.js';
import { countBytes } from '../telemetry/body-bytes.js';
import type { Kind } from './classify.js';

export const ANONYMOUS_LABEL = 'anonymous';
export const OTHER_LABEL = 'other';

interface Counters {
  requests: Counter<'key'>;
  bytes: Counter<'key'>;
  renders: Counter<'key'>;
  limited: Counter<'key' | 'budget'>;
}

let counters: Counters | undefined;

/** The key names of each state's configuration (keys files included): the only label values besides `anonymous` and `other`. */
const namesByState = new WeakMap<AppState, ReadonlySet<string>>();

export function keyNames(state: AppState): ReadonlySet<string> {
  let names = namesByState.get(state);
  if (!names) namesByState.set(state, (names = new Set((state.config.auth?.keys ?? []).map((k) => k.name))));
  return names;
}

export function usageLabel(principal: Principal | undefined, known: ReadonlySet<string>): string {
  if (!principal) return ANONYMOUS_LABEL;
  return principal.via === 'key' && known.has(principal.name) ? principal.name : OTHER_LABEL;
}

/** The counters, created in the registry on first use; undefined when telemetry has no registry. */
export function usageCounters(): Counters | undefined {
  if (counters) return counters;
  const registry = telemetry.prom?.registry;
  if (!registry) return undefined;
  const registers = [registry];
  counters = {
    requests: new Counter({ name: 'usage_requests_total', help: 'Requests answered, by API key name (anonymous: no credentials; other: a name not in the configuration)', labelNames: ['key'], registers }),
    bytes: new Counter({ name: 'usage_sent_bytes_total', help: 'Body bytes sent, by API key name', labelNames: ['key'], registers }),
    renders: new Counter({ name: 'usage_renders_total', help: 'Expensive answers (renders, static maps, transcodes, terrain, uploads; docs/rate-limits.md) with a status below 400, by API key name', labelNames: ['key'], registers }),
    limited: new Counter({ name: 'usage_limited_total', help: 'Requests refused with 429 by the rate limits, by API key name and budget (cheap, expensive)', labelNames: ['key', 'budget'], registers }),
  };
  return counters;
}

/** Counts `res`'s body bytes and, when it ends, the request under `label`. */
export function countUsage(c: Counters, label: string, kind: Kind, res: import('node:http').ServerResponse): void {
  const sent = countBytes(res);
  res.once('close', () => {
    c.requests.inc({ key: label });
    // Node sends no body with these, whatever a handler passed to end().
    const bodyless = res.req?.method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304;
    const bytes = sent();
    if (!bodyless && bytes > 0) c.bytes.inc({ key: label }, bytes);
    if (kind === 'expensive' && res.statusCode < 400) c.renders.inc({ key: label });
  });
}
