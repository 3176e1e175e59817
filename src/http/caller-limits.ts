import type { MiddlewareHandler } from "hono";
import { LocalTokenBuckets } from "../isolate/token-buckets";
import type { AppEnv } from "./app-env";
import { rateLimited } from "./errors";

// Per-caller limits against abuse of the public API. Rates are per second (burst = 2x),
// "0" disables a limit. They run in the isolate, before any network call.
const byRate = new Map<string, LocalTokenBuckets>();
function bucketsFor(kind: string, rate: number): LocalTokenBuckets {
  const key = `${kind}:${rate}`;
  let buckets = byRate.get(key);
  if (!buckets) {
    buckets = new LocalTokenBuckets(rate, rate * 2);
    byRate.set(key, buckets);
  }
  return buckets;
}

function limit(kind: "ip" | "user", rate: number, caller: string | undefined) {
  if (!(rate > 0) || !caller) return;
  const buckets = bucketsFor(kind, rate);
  const taken = buckets.take(caller);
  if (!taken.ok) {
    throw rateLimited(`too many requests from this ${kind === "ip" ? "address" : "user"}`, {
      limit: buckets.burst,
      retryAfterMs: taken.retryAfterMs,
    });
  }
}

/**
 * Requests without CF-Connecting-IP: Cloudflare sets it on every request at the edge, so only a
 * Worker run off Cloudflare (wrangler dev, a test harness) sees these. They share one bucket
 * rather than none, so leaving the header out is no way around the limit.
 */
const UNKNOWN_ADDRESS = "unknown-address";

/** Per client address. */
export const limitPerIp: MiddlewareHandler<AppEnv> = async (c, next) => {
  limit("ip", Number(c.env.IP_RATE_LIMIT), c.req.header("CF-Connecting-IP") ?? UNKNOWN_ADDRESS);
  await next();
};

/** Per verified user; mount after requireUser. */
export const limitPerUser: MiddlewareHandler<AppEnv> = async (c, next) => {
  limit("user", Number(c.env.USER_RATE_LIMIT), c.get("userId"));
  await next();
};
