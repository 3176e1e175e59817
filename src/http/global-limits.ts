import type { Context, MiddlewareHandler } from "hono";
import { type Admission, admit, admitCaller, type CallerLimitedRoute } from "../admission/global-limits";
import { clientAddress } from "./client-address";
import { rateLimited, unavailable } from "./errors";

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

/** A signed-in request (auth.ts imports this module: the shape is spelled here, not imported). */
type SignedIn = { Bindings: Env; Variables: { userId: string } };

/** Counts one request of `route` against the user's and the client address's global limits. */
export async function limitCallerGlobally(c: Context, route: CallerLimitedRoute, userId: string) {
  refuseUnlessAdmitted(
    await admitCaller(route, { userId, ip: clientAddress(c) }, c.env),
    "too many requests from this user or address; try again after Retry-After",
  );
}

/**
 * The global limits of `route` for the signed-in buyer; mount after requireUser and the
 * isolate's per-user bucket (the free first layer), so a caller that one refuses costs no Redis.
 */
export const limitGlobally =
  (route: CallerLimitedRoute): MiddlewareHandler<SignedIn> =>
  async (c, next) => {
    await limitCallerGlobally(c, route, c.get("userId"));
    await next();
  };
