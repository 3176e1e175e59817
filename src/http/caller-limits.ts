import type { MiddlewareHandler } from "hono";
import { LocalTokenBuckets } from "../isolate/token-buckets";
import { settingsOf } from "../shared/settings";
import type { AppEnv } from "./app-env";
import { clientAddress } from "./client-address";
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

/** Per client address. */
export const limitPerIp: MiddlewareHandler<AppEnv> = async (c, next) => {
  limit("ip", settingsOf(c.env).IP_RATE_LIMIT, clientAddress(c));
  await next();
};

/** Per verified user; mount after requireUser. */
export const limitPerUser: MiddlewareHandler<AppEnv> = async (c, next) => {
  limit("user", settingsOf(c.env).USER_RATE_LIMIT, c.get("userId"));
  await next();
};
