// `[rate_limits]`: per-client budgets by rate class, counted alone or shared through Redis (docs/rate-limits.md).
import * as v from 'valibot';
import { keyPath, redisUrl } from './common.js';
import { invalidCidrs } from '../cidr.js';
import { section } from './section.js';

/**
 * One budget of a rate class: a token bucket refilled at `rate` answers per second that holds at most `burst`.
 * Served as rate-limiter-flexible's window of `burst / rate` seconds (whole seconds) holding `burst` points; see
 * docs/rate-limits.md, "How a budget is counted".
 */
export const RateBudgetSchema = v.pipe(
  v.object({
    rate: v.pipe(v.number(), v.minValue(0.001, 'at least 0.001 per second'), v.maxValue(1_000_000)),
    /** Default: the rate (one second's worth), at least 1. */
    burst: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100_000_000))),
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const { rate, burst } = dataset.value;
    if (burst !== undefined && burst < rate) {
      addIssue({ message: `burst (${burst}) must be at least the rate (${rate}): budgets are counted in windows of whole seconds`, path: keyPath(dataset.value, 'burst') });
    }
    if (burst !== undefined && burst / rate > 86_400) {
      addIssue({ message: `burst / rate is ${Math.round(burst / rate)} s: a bucket must refill within a day (86400 s)`, path: keyPath(dataset.value, 'burst') });
    }
  }),
);

/** A named rate class: what its holders may ask for. A budget left out is not limited. */
export const RateClassSchema = v.object({
  /** Stored and cached tiles, TileJSON, styles, fonts, sprites, pages and every other route not listed as expensive. */
  cheap: v.optional(RateBudgetSchema),
  /** Renders, static maps, social cards, transcodes, uploads, elevation, hillshade and contours (docs/rate-limits.md). */
  expensive: v.optional(RateBudgetSchema),
});

const rateClassName = v.pipe(v.string(), v.regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, 'a class name of letters, digits, "_", "-" and "."'), v.maxLength(64));

/** `[rate_limits]`: per-client budgets shared by a fleet (docs/rate-limits.md). Absent: no limits and no headers. */
export const RateLimitsSchema = v.pipe(
  v.object({
    enabled: v.optional(v.boolean(), true),
    classes: v.optional(v.record(rateClassName, RateClassSchema), {}),
    /** The class of an API key or token that names none; unset: such requests are not limited. */
    default_class: v.optional(rateClassName),
    /** The class of requests without credentials, limited per client address; unset: they are not limited. */
    anonymous_class: v.optional(rateClassName),
    /** Peers (CIDR ranges or addresses) whose `X-Forwarded-For` is believed: load balancers, CDNs, reverse proxies. */
    trusted_proxies: v.optional(
      v.pipe(
        v.array(v.string()),
        v.maxLength(1024),
        v.rawCheck(({ dataset, addIssue }) => {
          if (!dataset.typed) return;
          const bad = invalidCidrs(dataset.value);
          if (bad.length) addIssue({ message: `not an address or CIDR range: ${bad.map((b) => JSON.stringify(b)).join(', ')}` });
        }),
      ),
      [],
    ),
    /** Share the budgets through Redis: `[rate_limits] redis`, else `[cache] shared`. false: each machine counts alone. */
    shared: v.optional(v.boolean(), true),
    /** The Redis the budgets are counted in; default: the fleet's shared cache (`[cache] shared`). */
    redis: v.optional(redisUrl),
    /** Longest wait for Redis per request; past it (or with Redis down) the machine counts alone. */
    redis_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000)), 100),
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const r = dataset.value;
    for (const key of ['default_class', 'anonymous_class'] as const) {
      const name = r[key];
      if (name !== undefined && !Object.hasOwn(r.classes, name)) {
        const known = Object.keys(r.classes);
        addIssue({ message: `${key} "${name}" is not a class of [rate_limits.classes] (${known.length ? `classes: ${known.join(', ')}` : 'none is configured'})`, path: keyPath(r, key) });
      }
    }
  }),
);

export const rateLimits = section(v.optional(RateLimitsSchema));
