import type { MiddlewareHandler } from "hono";
import { settingsOf } from "../shared/settings";
import type { AppEnv } from "./app-env";
import { ApiError } from "./errors";

/**
 * CORS for the public API: only the listed origins, each echoed back (never `*`, and no
 * credentials: callers send a bearer token, not cookies). Mounted before the per-IP limit
 * so a 429 still carries the headers a shop's page needs to read Retry-After. Written here
 * rather than hono/cors: this is all the API needs, at a third of its size in a bundle that
 * has to stay under 80 KiB.
 */
export const publicCors: MiddlewareHandler<AppEnv> = async (c, next) => {
  const origin = c.req.header("Origin");
  const allowed = origin !== undefined && settingsOf(c.env).ALLOWED_ORIGINS.includes(origin);
  if (c.req.method === "OPTIONS" && c.req.header("Access-Control-Request-Method")) {
    if (!allowed) throw new ApiError("CORS_ORIGIN_DENIED");
    return c.body(null, 204, {
      "Access-Control-Allow-Origin": origin,
      "Access-Control-Allow-Methods": "GET, POST, DELETE",
      "Access-Control-Allow-Headers":
        "Authorization, Content-Type, Idempotency-Key, Queue-Pass, Queue-Ticket, Human-Check, Access-Code",
      "Access-Control-Max-Age": "600",
      Vary: "Origin",
    });
  }
  await next();
  // On the response's own headers, as secureHeaders does: hono's c.header() after a route has
  // answered copies the whole response first (a second Response for every API request).
  const headers = c.res.headers;
  headers.append("Vary", "Origin");
  if (allowed) {
    headers.set("Access-Control-Allow-Origin", origin);
    headers.set(
      "Access-Control-Expose-Headers",
      "Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, Queue-Ticket",
    );
  }
};

/**
 * Admin routes are never cross-origin: they send no CORS headers, and a request a browser
 * marks as coming from another origin is refused before the admin token is even looked at.
 */
export const sameOriginOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  const origin = c.req.header("Origin");
  if (origin !== undefined && origin !== new URL(c.req.url).origin) {
    throw new ApiError("CROSS_ORIGIN");
  }
  await next();
};
