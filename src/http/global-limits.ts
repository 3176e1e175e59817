import type { MiddlewareHandler } from "hono";
import { type Admission, admit } from "../admission/global-limits";
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
