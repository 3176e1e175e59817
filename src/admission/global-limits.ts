// Admission, global layer: limits counted in Redis with @upstash/ratelimit, so they hold across
// every isolate and location (the isolate buckets of src/http/caller-limits.ts are the first,
// free layer; they count per isolate only). Used where a global count matters and one extra
// round trip is affordable: failed admin authentications and the payments webhook. Checkout is
// not given one: its script's per-sale bucket is its limit, in its one round trip.
import { Ratelimit } from "@upstash/ratelimit";
import { type Redis, redisFor } from "../redis/client";

/** What each global limit counts, and the var that sets its allowance per minute. */
const LIMITS = {
  /** Failed admin authentications per client address. */
  "admin-auth-failures": { setting: "ADMIN_AUTH_FAILURES_PER_MIN", defaultPerMinute: 10 },
  /** Payment webhook deliveries per client address: generous, a provider sends in bursts. */
  webhook: { setting: "WEBHOOK_RATE_PER_MIN", defaultPerMinute: 600 },
} as const;

export type GlobalLimit = keyof typeof LIMITS;

/** The allowance per minute of `limit` (its var when a positive whole number, else the default). */
export function perMinute(limit: GlobalLimit, env: Env): number {
  const { setting, defaultPerMinute } = LIMITS[limit];
  const n = Number(env[setting]);
  return Number.isInteger(n) && n > 0 ? n : defaultPerMinute;
}

export type Admission = { admitted: true } | { admitted: false; retryAfterSec: number; limit: number } | { unavailable: true };

/**
 * The library's ephemeral cache: once Redis says a caller is blocked, this isolate refuses it
 * until the window resets without asking Redis again. Kept for the isolate's life, one per limit.
 */
const ephemeralCaches = new Map<GlobalLimit, Map<string, number>>();
/** Per Redis client (a test may point one Worker at another Redis), per limit and allowance. */
const limiters = new WeakMap<Redis, Map<string, Ratelimit>>();

function limiterFor(limit: GlobalLimit, env: Env): Ratelimit {
  const allowance = perMinute(limit, env);
  const redis = redisFor(env);
  let ofClient = limiters.get(redis);
  if (!ofClient) {
    ofClient = new Map();
    limiters.set(redis, ofClient);
  }
  const key = `${limit}:${allowance}`;
  let limiter = ofClient.get(key);
  if (!limiter) {
    let cache = ephemeralCaches.get(limit);
    if (!cache) {
      cache = new Map();
      ephemeralCaches.set(limit, cache);
    }
    limiter = new Ratelimit({
      redis,
      limiter: Ratelimit.slidingWindow(allowance, "60 s"),
      prefix: `fs:admission:${limit}`,
      ephemeralCache: cache,
      // The Redis client bounds each request by REDIS_TIMEOUT_MS and throws past it; the
      // library's own timer would instead resolve success: true (fail open), see admit().
      timeout: Number(env.REDIS_TIMEOUT_MS) || undefined,
      analytics: false,
    });
    ofClient.set(key, limiter);
  }
  return limiter;
}

const verdict = (result: { success: boolean; reason?: string; reset: number; limit: number }): Admission => {
  // Failing closed: on a timeout the library answers success: true with reason "timeout";
  // that is no admission, so it is turned into "unavailable" like a Redis error.
  if (result.reason === "timeout") return { unavailable: true };
  if (result.success) return { admitted: true };
  return { admitted: false, retryAfterSec: Math.max(1, Math.ceil((result.reset - Date.now()) / 1000)), limit: result.limit };
};

/** Counts one use by `caller` against `limit`; never admits when Redis cannot say. */
export async function admit(limit: GlobalLimit, caller: string, env: Env): Promise<Admission> {
  try {
    return verdict(await limiterFor(limit, env).limit(caller));
  } catch {
    return { unavailable: true };
  }
}

/** Whether `caller` is within `limit` right now, counting nothing (a blocked caller stays blocked). */
export async function withinLimit(limit: GlobalLimit, caller: string, env: Env): Promise<Admission> {
  try {
    const { remaining, reset } = await limiterFor(limit, env).getRemaining(caller);
    return verdict({ success: remaining > 0, reset, limit: perMinute(limit, env) });
  } catch {
    return { unavailable: true };
  }
}
