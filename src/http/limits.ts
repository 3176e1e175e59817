// The limits every route shares, in two layers: buckets per caller inside the isolate (free,
// no network: the first layer) and the global limits counted in Redis across every isolate
// (src/admission/global-limits.ts counts them; these are their doors).
import type { Context, MiddlewareHandler } from "hono";
import { type Admission, admit, admitCaller, type CallerLimitedRoute, callerBlockedHere } from "../admission/global-limits";
import { LocalTokenBuckets } from "../isolate/token-buckets";
import { settingsOf } from "../shared/settings";
import type { AppEnv } from "./app-env";
import { clientAddress } from "./client-address";
import { rateLimited, unavailable } from "./errors";

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

/** 429 RATE_LIMITED with Retry-After when refused; 503 when Redis could not say (fail closed). */
export function refuseUnlessAdmitted(admission: Admission, message: string): void {
  if ("unavailable" in admission) throw unavailable("the request cannot be admitted right now");
  if (!admission.admitted) throw rateLimited(message, { limit: admission.limit, retryAfterMs: admission.retryAfterSec * 1000 });
}

/** The payments webhook: a generous allowance per client address, counted across isolates. */
export const limitWebhookPerIp: MiddlewareHandler<{ Bindings: Env }> = async (c, next) => {
  refuseUnlessAdmitted(await admit("webhook", clientAddress(c), c.env), "too many webhook deliveries from this address");
  await next();
};

/** Counts one request of `route` against the user's and the client address's global limits. */
export async function limitCallerGlobally(c: Context, route: CallerLimitedRoute, userId: string) {
  refuseUnlessAdmitted(
    await admitCaller(route, { userId, ip: clientAddress(c) }, c.env),
    "too many requests from this user or address; try again after Retry-After",
  );
}

/**
 * Guessing access codes: a caller this isolate knows to be past its allowance of codes refused
 * as invalid is refused 429 before its code is even read (no Redis command; the count itself is
 * kept by `countCodeFailure`, after each refusal, so checkouts with good codes cost nothing extra).
 */
export function refuseCodeGuesser(c: Context, userId: string) {
  const blocked = callerBlockedHere("access-code-failures", { userId, ip: clientAddress(c) }, c.env);
  if (blocked)
    refuseUnlessAdmitted(blocked, "too many access codes refused from this user or address; try again after Retry-After");
}

/** Counts a code refused as invalid against the caller's allowances, in the background. */
export function countCodeFailure(c: Context, userId: string, keepAlive: (work: Promise<unknown>) => void) {
  keepAlive(admitCaller("access-code-failures", { userId, ip: clientAddress(c) }, c.env));
}

/**
 * The global limits of `route` for the signed-in buyer; mount after requireUser and the
 * isolate's per-user bucket (the free first layer), so a caller that one refuses costs no Redis.
 */
export const limitGlobally =
  (route: CallerLimitedRoute): MiddlewareHandler<AppEnv> =>
  async (c, next) => {
    await limitCallerGlobally(c, route, c.get("userId"));
    await next();
  };
