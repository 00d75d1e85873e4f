// How a configured budget (a token bucket: `rate` per second, at most `burst` at once) is counted with
// rate-limiter-flexible, whose limiters count points in a fixed window that opens with a client's first request.
// The closest faithful construction is one window of `burst / rate` seconds holding `burst` points: a client that
// was idle can spend its whole burst at once, and over any long stretch it gets `rate` per second, as from a
// bucket. Where it differs from a bucket: spent points come back all at once at the end of the window instead of
// trickling back, and a client that spends a burst just before its window ends and another just after gets up to
// twice the burst in a short time. Redis keeps whole seconds (EX), so the window is rounded to whole seconds and
// the points to whole requests; the header `RateLimit-Policy` states the window and points actually in force.
// (BurstyRateLimiter, a steady limiter plus a burst allowance, was the other candidate: a client that keeps
// asking gets the steady rate plus the whole allowance every allowance window, so its long-run rate is above
// `rate`; docs/rate-limits.md.)
import type { RateBudgetConfig } from '../config/schema.js';

export interface BucketShape {
  /** Requests one window holds. */
  points: number;
  /** The window, in whole seconds. */
  duration: number;
}

/** The window and points that count `budget` (both at least 1). */
export function bucketShape(budget: RateBudgetConfig): BucketShape {
  const burst = budget.burst ?? Math.max(1, Math.ceil(budget.rate));
  const duration = Math.min(86_400, Math.max(1, Math.round(burst / budget.rate)));
  const points = Math.max(1, Math.round(budget.rate * duration));
  return { points, duration };
}
