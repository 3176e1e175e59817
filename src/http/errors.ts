import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { ErrorBody } from "../shared/api-types";
import { ERRORS, type ErrorCode } from "../shared/error-codes";
import { type LogFields, log } from "../shared/log";
import type { Refusal } from "../shared/refusal";
import { SettingsRefused } from "../shared/settings";
import { Unavailable } from "../shared/unavailable";

const errorBody = (code: ErrorCode, message: string): ErrorBody => ({ error: { code, message } });

/** What the API answers for an error: the one error shape, its status and headers. */
interface ErrorAnswer {
  status: ContentfulStatusCode;
  code: ErrorCode;
  message: string;
  headers: Record<string, string>;
}

/** `code`'s answer: its words unless `message` says more, Retry-After where the code always carries one. */
function answer(code: ErrorCode, message?: string, headers: Record<string, string> = {}): ErrorAnswer {
  const spec: { status: ContentfulStatusCode; words: string; retryAfterSec?: number } = ERRORS[code];
  const always = spec.retryAfterSec === undefined || "Retry-After" in headers ? {} : retryAfter(spec.retryAfterSec);
  return { status: spec.status, code, message: message ?? spec.words, headers: { ...always, ...headers } };
}

const errorResponse = (c: Context, { status, code, message, headers }: ErrorAnswer): Response =>
  c.json(errorBody(code, message), status, headers);

/** An error answer thrown to the error handler, from any depth: a code of the catalog (src/shared/error-codes.ts). */
export class ApiError extends Error implements ErrorAnswer {
  readonly status: ContentfulStatusCode;
  readonly headers: Record<string, string>;

  constructor(
    readonly code: ErrorCode,
    message?: string,
    headers?: Record<string, string>,
  ) {
    const { status, message: text, headers: all } = answer(code, message, headers);
    super(text);
    this.status = status;
    this.headers = all;
  }
}

/** A Retry-After header of `seconds`. */
export const retryAfter = (seconds: number): Record<string, string> => ({ "Retry-After": String(seconds) });

export const badRequest = (message: string) => new ApiError("BAD_REQUEST", message);
export const unauthorized = (message?: string) =>
  new ApiError("UNAUTHORIZED", message, { "WWW-Authenticate": 'Bearer realm="flash-sale"' });
export const unavailable = (message: string, retryAfterSeconds = 1) =>
  new ApiError("UNAVAILABLE", message, retryAfter(retryAfterSeconds));

/**
 * `work`'s answer. When what it reaches (Redis, D1, a provider) fails, the failure is logged
 * with `fields` and answered 503: with `message`, or the failure's own words when it is an
 * Unavailable. An ApiError (a decided answer) and refused settings go through as they are.
 */
export async function orUnavailable<T>(message: string, fields: LogFields, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (err instanceof ApiError || err instanceof SettingsRefused) throw err;
    const known = err instanceof Unavailable;
    if (!(known && err.logged)) log.warn("answered 503: a store or provider failed", { ...fields, answer: message }, err);
    throw unavailable(known ? err.message : message);
  }
}

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
  new ApiError("RATE_LIMITED", message, rateLimitHeaders(bucket));

/**
 * The API's answer to a refused checkout, whoever refused it (Redis, the isolate memo, a lab
 * strategy): the code's words, or words that say what the refusal knows.
 */
function refusalAnswer(refusal: Refusal): ErrorAnswer {
  switch (refusal.code) {
    case "SOLD_OUT": {
      const what = refusal.variant ? `variant ${refusal.variant}` : "the sale";
      if (refusal.inLane)
        return answer("SOLD_OUT", `the lane open now has sold its units of ${what}; a later lane may have more`);
      return answer("SOLD_OUT", refusal.variant ? `${what} is sold out` : undefined);
    }
    case "QUANTITY_UNAVAILABLE": {
      const { remaining, variant } = refusal;
      const of = `${variant ? `of variant ${variant}` : "in this sale"}${refusal.inLane ? "'s lane open now" : ""}`;
      return answer("QUANTITY_UNAVAILABLE", `only ${remaining} unit${remaining === 1 ? "" : "s"} remain ${of}`);
    }
    case "VARIANT_NOT_FOUND":
      return answer("VARIANT_NOT_FOUND", `this sale has no variant ${refusal.variant}`);
    case "PER_USER_LIMIT_EXCEEDED": {
      const { held, limit } = refusal;
      return answer(
        "PER_USER_LIMIT_EXCEEDED",
        `you hold ${held} of the ${limit} units one buyer may hold in this sale; you may buy ${limit - held} more`,
      );
    }
    case "ALREADY_PURCHASED":
      return answer(
        "ALREADY_PURCHASED",
        refusal.orderId && `${ERRORS.ALREADY_PURCHASED.words} (your latest order: ${refusal.orderId})`,
      );
    case "SALE_NOT_STARTED":
      return answer("SALE_NOT_STARTED", `the sale starts at ${new Date(refusal.startsAt).toISOString()}`);
    case "ACCESS_CODE_REQUIRED":
      return answer(
        "ACCESS_CODE_REQUIRED",
        `a presale lane is open: send your code in the Access-Code header, or come back at ${new Date(refusal.publicStartsAt).toISOString()}, the public start`,
      );
    case "RATE_LIMITED":
      return answer(
        "RATE_LIMITED",
        "the sale is admitting buyers at its configured rate; retry shortly",
        rateLimitHeaders({ limit: refusal.admission.burst, retryAfterMs: refusal.retryAfterMs }),
      );
    case "IDEMPOTENCY_KEY_REUSED":
      return answer("IDEMPOTENCY_KEY_REUSED", "this Idempotency-Key was used for a checkout of another quantity");
    default:
      return answer(refusal.code);
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
    return c.json(errorBody("BAD_REQUEST", err.message || ERRORS.BAD_REQUEST.words), err.status);
  }
  log.error("unhandled error", {}, err);
  return errorResponse(c, answer("INTERNAL"));
}

export const notFoundRoute = (c: Context) => errorResponse(c, answer("NOT_FOUND"));

/** hono's methodNotAllowed answer: the one error shape, and the path's methods in Allow. */
export const methodNotAllowedRoute = (c: Context, methods: string[]) =>
  c.json(errorBody("METHOD_NOT_ALLOWED", `${c.req.method} is not allowed here; use ${methods.join(", ")}`), 405, {
    Allow: methods.join(", "),
  });
