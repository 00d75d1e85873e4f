// Budgets per machine, not per process: with several worker processes and no Redis (or Redis down) the primary
// holds every bucket and the workers consume from it over the cluster's IPC channel (rate-limiter-flexible's
// RateLimiterClusterMaster and RateLimiterCluster). The primary must listen before any worker sends its first
// message, so `serveClusterLimits` is called before the first fork, whether or not rate limits are configured
// (a reload may turn them on); it costs one listener on cluster messages.
import { RateLimiterClusterMaster } from 'rate-limiter-flexible';

let served = false;

export function serveClusterLimits(): void {
  if (served) return;
  served = true;
  new RateLimiterClusterMaster();
}
