// Admission, global layer: limits counted in Redis (src/redis/sliding-window.ts: the sliding
// window of @upstash/ratelimit, its scripts' counting and its keys), so they hold across
// every isolate and location (the isolate buckets of src/http/limits.ts are the first,
// free layer; they count per isolate only). Used where a global count matters and one extra
// round trip is affordable: failed admin authentications, the payments webhook, and per user
// and per client address the queue join, dev login, pay and cancel, and order reads. Checkout
// is not given one: a queued sale's pass is its limit, an unqueued sale's bucket in the script
// is, both in its one round trip.
//
// Failing closed: the window's default (the library's) is to let a request through when Redis is
// slower than its timeout (it answers `success: true, reason: "timeout"`). Here that answer and a Redis
// error are both "unavailable", which the routes answer 503: never admitted unseen.
import { BoundedMap } from "../isolate/bounded-map";
import { type Redis, redisFor } from "../redis/client";
import { SlidingWindow } from "../redis/sliding-window";
import { type SettingName, settingsOf } from "../shared/settings";

/** What each global limit counts, and the setting of its allowance per minute. */
const LIMITS = {
  /** Failed admin authentications per client address. */
  "admin-auth-failures": "ADMIN_AUTH_FAILURES_PER_MIN",
  /** Payment webhook deliveries per client address: generous, a provider sends in bursts. */
  webhook: "WEBHOOK_RATE_PER_MIN",
  // Per user and per client address, each route's pair (see CallerLimitedRoute); "0" turns one off.
  "queue-join:user": "QUEUE_JOINS_PER_USER_PER_MIN",
  "queue-join:ip": "QUEUE_JOINS_PER_IP_PER_MIN",
  "draw-entry:user": "DRAW_ENTRIES_PER_USER_PER_MIN",
  "draw-entry:ip": "DRAW_ENTRIES_PER_IP_PER_MIN",
  "access-code-failures:user": "ACCESS_CODE_FAILURES_PER_USER_PER_MIN",
  "access-code-failures:ip": "ACCESS_CODE_FAILURES_PER_IP_PER_MIN",
  "dev-login:user": "DEV_LOGINS_PER_USER_PER_MIN",
  "dev-login:ip": "DEV_LOGINS_PER_IP_PER_MIN",
  "order-changes:user": "ORDER_CHANGES_PER_USER_PER_MIN",
  "order-changes:ip": "ORDER_CHANGES_PER_IP_PER_MIN",
  "order-reads:user": "ORDER_READS_PER_USER_PER_MIN",
  "order-reads:ip": "ORDER_READS_PER_IP_PER_MIN",
} as const satisfies Record<string, SettingName>;

export type GlobalLimit = keyof typeof LIMITS;

/** Routes limited per user and per client address: joining a queue, entering a draw, dev login, pay and cancel, order reads. */
export type CallerLimitedRoute =
  | "queue-join"
  | "draw-entry"
  | "dev-login"
  | "order-changes"
  | "order-reads"
  /** Counted after the fact: an access code refused as invalid (guessing), not every checkout with one. */
  | "access-code-failures";

/**
 * The allowance per minute of `limit`, undefined when its setting turns it off ("0": only the
 * per-caller pairs accept it; the admin and webhook ones stay on).
 */
function perMinute(limit: GlobalLimit, env: Env): number | undefined {
  return settingsOf(env)[LIMITS[limit]] || undefined;
}

export type Admission = { admitted: true } | { admitted: false; retryAfterSec: number; limit: number } | { unavailable: true };

/**
 * The ephemeral cache: once Redis says a caller is blocked, this isolate refuses it
 * until the window resets without asking Redis again. Kept for the isolate's life, one per limit.
 */
const ephemeralCaches = new Map<GlobalLimit, Map<string, number>>();
/** Per Redis client (a test may point one Worker at another Redis), per limit and allowance. */
const limiters = new WeakMap<Redis, Map<string, SlidingWindow>>();

/** Where a limit's counts live in Redis; the window keys its ephemeral cache by `<prefix>:<caller>` too. */
const prefixOf = (limit: GlobalLimit) => `fs:admission:${limit}`;

/**
 * Callers each limit's ephemeral cache remembers (blocked ones, by when their window resets),
 * a few MB at most per limit; one forgotten while still blocked asks Redis again, which says so.
 */
const EPHEMERAL_CACHE_ENTRIES = 20_000;

function ephemeralCache(limit: GlobalLimit): Map<string, number> {
  let cache = ephemeralCaches.get(limit);
  if (!cache) {
    cache = new BoundedMap(EPHEMERAL_CACHE_ENTRIES);
    ephemeralCaches.set(limit, cache);
  }
  return cache;
}

function limiterFor(limit: GlobalLimit, allowance: number, env: Env): SlidingWindow {
  const redis = redisFor(env);
  let ofClient = limiters.get(redis);
  if (!ofClient) {
    ofClient = new Map();
    limiters.set(redis, ofClient);
  }
  const key = `${limit}:${allowance}`;
  let limiter = ofClient.get(key);
  if (!limiter) {
    limiter = new SlidingWindow({
      redis,
      tokens: allowance,
      windowMs: 60_000,
      prefix: prefixOf(limit),
      ephemeralCache: ephemeralCache(limit),
      // The Redis client bounds each request by REDIS_TIMEOUT_MS and throws past it; the
      // window's own timer would instead resolve success: true (fail open), see admit().
      timeoutMs: settingsOf(env).REDIS_TIMEOUT_MS,
    });
    ofClient.set(key, limiter);
  }
  return limiter;
}

const verdict = (result: { success: boolean; reason?: string; reset: number; limit: number }): Admission => {
  // Failing closed: on a timeout the window answers success: true with reason "timeout";
  // that is no admission, so it is turned into "unavailable" like a Redis error.
  if (result.reason === "timeout") return { unavailable: true };
  if (result.success) return { admitted: true };
  return { admitted: false, retryAfterSec: Math.max(1, Math.ceil((result.reset - Date.now()) / 1000)), limit: result.limit };
};

/** Counts one use by `caller` against `limit`; never admits when Redis cannot say. */
export async function admit(limit: GlobalLimit, caller: string, env: Env): Promise<Admission> {
  const allowance = perMinute(limit, env);
  if (allowance === undefined) return { admitted: true };
  try {
    return verdict(await limiterFor(limit, allowance, env).limit(caller));
  } catch {
    return { unavailable: true };
  }
}

/** The refusal this isolate's ephemeral cache holds for `caller` under `limit`, if it is blocked: no Redis command. */
export function blockedHere(limit: GlobalLimit, caller: string, env: Env): Admission | undefined {
  const allowance = perMinute(limit, env);
  const reset = ephemeralCaches.get(limit)?.get(`${prefixOf(limit)}:${caller}`);
  if (allowance === undefined || reset === undefined || reset < Date.now()) return undefined;
  return verdict({ success: false, reset, limit: allowance });
}

const usesOf = (route: CallerLimitedRoute, caller: { userId: string; ip: string }): [GlobalLimit, string][] => [
  [`${route}:user`, caller.userId],
  [`${route}:ip`, caller.ip],
];

/** The refusal this isolate already knows for the caller under either of `route`'s limits, with no Redis command. */
export function callerBlockedHere(
  route: CallerLimitedRoute,
  caller: { userId: string; ip: string },
  env: Env,
): Admission | undefined {
  for (const [limit, id] of usesOf(route, caller)) {
    const blocked = blockedHere(limit, id, env);
    if (blocked) return blocked;
  }
  return undefined;
}

/**
 * Counts one request of `route` against both its limits, the user's and the client
 * address's. A caller this isolate already knows to be blocked by either is refused with no
 * Redis command; otherwise both are counted at once (the client folds them into one round
 * trip). Never admits when Redis cannot say.
 */
export async function admitCaller(
  route: CallerLimitedRoute,
  caller: { userId: string; ip: string },
  env: Env,
): Promise<Admission> {
  const blocked = callerBlockedHere(route, caller, env);
  if (blocked) return blocked;
  const uses = usesOf(route, caller);
  const admissions = await Promise.all(uses.map(([limit, id]) => admit(limit, id, env)));
  return (
    admissions.find((a) => "unavailable" in a) ?? admissions.find((a) => "admitted" in a && !a.admitted) ?? { admitted: true }
  );
}
