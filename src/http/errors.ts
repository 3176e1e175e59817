import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ErrorBody } from "../shared/api-types";
import { log } from "../shared/log";
import type { Refusal } from "../shared/refusal";
import { SettingsRefused } from "../shared/settings";

const errorBody = (code: string, message: string): ErrorBody => ({ error: { code, message } });

/** What the API answers for an error: the one error shape, its status and headers. */
interface ErrorAnswer {
  status: ContentfulStatusCode;
  code: string;
  message: string;
  headers: Record<string, string>;
}

const answer = (
  status: ContentfulStatusCode,
  code: string,
  message: string,
  headers: Record<string, string> = {},
): ErrorAnswer => ({
  status,
  code,
  message,
  headers,
});

const errorResponse = (c: Context, { status, code, message, headers }: ErrorAnswer): Response =>
  c.json(errorBody(code, message), status, headers);

/** An error answer thrown to the error handler, from any depth. */
export class ApiError extends Error implements ErrorAnswer {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const badRequest = (message: string) => new ApiError(400, "BAD_REQUEST", message);
export const unauthorized = (message = "a valid bearer token is required") =>
  new ApiError(401, "UNAUTHORIZED", message, { "WWW-Authenticate": 'Bearer realm="flash-sale"' });
export const notFound = (code: string, message: string) => new ApiError(404, code, message);
export const unsupportedMediaType = () =>
  new ApiError(415, "UNSUPPORTED_MEDIA_TYPE", "request bodies must be JSON, sent with Content-Type: application/json");
export const unavailable = (message: string, retryAfterSeconds = 1) =>
  new ApiError(503, "UNAVAILABLE", message, { "Retry-After": String(retryAfterSeconds) });
/** Another payment for the order is being processed: nothing was charged; ask again after Retry-After. */
export const paymentInProgress = (message: string, retryAfterSeconds: number) =>
  new ApiError(409, "PAYMENT_IN_PROGRESS", message, { "Retry-After": String(retryAfterSeconds) });

/**
 * Retry-After and the IETF RateLimit-* headers (draft-ietf-httpapi-ratelimit-headers), the
 * same shape for every limiter's 429.
 */
function rateLimitHeaders(bucket: { limit: number; retryAfterMs: number }): Record<string, string> {
  const seconds = String(Math.max(1, Math.ceil(bucket.retryAfterMs / 1000)));
  return {
    "Retry-After": seconds,
    "RateLimit-Limit": String(bucket.limit),
    "RateLimit-Remaining": "0",
    "RateLimit-Reset": seconds,
  };
}

export const rateLimited = (message: string, bucket: { limit: number; retryAfterMs: number }) =>
  new ApiError(429, "RATE_LIMITED", message, rateLimitHeaders(bucket));

/** The API's answer to a refused checkout, whoever refused it (Redis, the isolate memo, a lab strategy). */
function refusalAnswer(refusal: Refusal): ErrorAnswer {
  switch (refusal.code) {
    case "SOLD_OUT":
      return answer(409, "SOLD_OUT", refusal.variant ? `variant ${refusal.variant} is sold out` : "the sale is sold out");
    case "QUANTITY_UNAVAILABLE":
      return answer(
        409,
        "QUANTITY_UNAVAILABLE",
        `only ${refusal.remaining} unit${refusal.remaining === 1 ? "" : "s"} remain ${refusal.variant ? `of variant ${refusal.variant}` : "in this sale"}`,
      );
    case "VARIANT_REQUIRED":
      return answer(400, "VARIANT_REQUIRED", "this sale has variants: name one in the body's variant");
    case "VARIANT_NOT_FOUND":
      return answer(404, "VARIANT_NOT_FOUND", `this sale has no variant ${refusal.variant}`);
    case "PER_USER_LIMIT_EXCEEDED":
      return answer(
        409,
        "PER_USER_LIMIT_EXCEEDED",
        `you hold ${refusal.held} of the ${refusal.limit} units one buyer may hold in this sale; you may buy ${refusal.limit - refusal.held} more`,
      );
    case "ALREADY_PURCHASED":
      return answer(
        409,
        "ALREADY_PURCHASED",
        refusal.orderId
          ? `you already hold the most units one buyer may hold in this sale (your latest order: ${refusal.orderId})`
          : "you already hold the most units one buyer may hold in this sale",
      );
    case "SALE_NOT_STARTED":
      return answer(409, "SALE_NOT_STARTED", `the sale starts at ${new Date(refusal.startsAt).toISOString()}`);
    case "SALE_ENDED":
      return answer(409, "SALE_ENDED", "the sale has ended");
    case "SALE_PAUSED":
      return answer(409, "SALE_PAUSED", "the sale is paused; try again later");
    case "SALE_CANCELLED":
      return answer(409, "SALE_CANCELLED", "the sale was cancelled");
    case "SALE_NOT_FOUND":
      return answer(404, "SALE_NOT_FOUND", "no such sale");
    case "RATE_LIMITED":
      return answer(
        429,
        "RATE_LIMITED",
        "the sale is admitting buyers at its configured rate; retry shortly",
        rateLimitHeaders({ limit: refusal.admission.burst, retryAfterMs: refusal.retryAfterMs }),
      );
    case "IDEMPOTENCY_KEY_REUSED":
      return answer(422, "IDEMPOTENCY_KEY_REUSED", "this Idempotency-Key was used for a checkout of another quantity");
    case "HUMAN_CHECK_REQUIRED":
      return answer(403, "HUMAN_CHECK_REQUIRED", "this sale asks for the human check: send its token in the Human-Check header");
    case "HUMAN_CHECK_FAILED":
      return answer(403, "HUMAN_CHECK_FAILED", "the human check did not pass; complete it again");
    case "BUSY":
      return answer(503, "BUSY", "too many checkouts contend for this sale; try again shortly", { "Retry-After": "1" });
    case "QUEUE_PASS_REQUIRED":
      return answer(
        403,
        "QUEUE_PASS_REQUIRED",
        "this sale has a waiting room: check out with the Queue-Pass your place was given",
      );
    case "QUEUE_PASS_INVALID":
      return answer(403, "QUEUE_PASS_INVALID", "this Queue-Pass is not yours, not this sale's, or not admitted");
    case "QUEUE_PASS_USED":
      return answer(409, "QUEUE_PASS_USED", "this Queue-Pass bought already; each pass buys once");
    case "QUEUE_PASS_EXPIRED":
      return answer(409, "QUEUE_PASS_EXPIRED", "this Queue-Pass expired; the next place in line was let in");
  }
}

/**
 * A refused checkout as a response, returned rather than thrown: refusals are what a crowd
 * mostly gets, and constructing an Error (its stack) for each was 13-17% of a warm refusal's
 * isolate time in the V8 profile (`npm run bench -- --only profile`); returned, 2%.
 */
export const refusalResponse = (c: Context, refusal: Refusal): Response => errorResponse(c, refusalAnswer(refusal));

/** Hono onError: known errors keep their status; anything else is a 500 without internals. */
export function handleError(err: Error, c: Context): Response {
  if (err instanceof ApiError) return errorResponse(c, err);
  if (err instanceof SettingsRefused) {
    // Named to the caller as the short ADMIN_TOKEN is: the operator sees why every request fails.
    log.error("configuration refused", { problems: err.message });
    return errorResponse(c, unavailable(`this server's settings are refused: ${err.message}`, 60));
  }
  if (err instanceof HTTPException && err.status < 500) {
    // hono's body limit and parsers throw these for malformed requests.
    return c.json(errorBody("BAD_REQUEST", err.message || "malformed request"), err.status);
  }
  log.error("unhandled error", {}, err);
  return c.json(errorBody("INTERNAL", "internal error"), 500);
}

export const notFoundRoute = (c: Context) => c.json(errorBody("NOT_FOUND", "no such route"), 404);

/** hono's methodNotAllowed answer: the one error shape, and the path's methods in Allow. */
export const methodNotAllowedRoute = (c: Context, methods: string[]) =>
  c.json(errorBody("METHOD_NOT_ALLOWED", `${c.req.method} is not allowed here; use ${methods.join(", ")}`), 405, {
    Allow: methods.join(", "),
  });
