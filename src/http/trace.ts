import type { MiddlewareHandler } from "hono";
import { continueTrace, inTrace } from "../shared/trace";

/**
 * Every request runs in a trace: the caller's `traceparent` continued (this Worker's own span
 * under the caller's), or a new one. Its log lines carry the trace id, and an order it
 * reserves carries the traceparent on (the queue message, the outbox record, the D1 row).
 */
export const traceRequests: MiddlewareHandler = (c, next) => inTrace(continueTrace(c.req.header("traceparent")), next);
