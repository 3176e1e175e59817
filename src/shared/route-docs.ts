// What a route's documentation says, and the words routes share. Each route module
// src/routes/<name>.ts has a twin, src/routes/<name>.docs.ts, that declares its routes' docs
// beside the handlers; src/routes/api.docs.ts lists them all, and `npm run generate` assembles
// the API document (public/openapi.json) and its reference page from them and the error
// catalog. The Worker never imports a .docs.ts file (the layer rule forbids it), so no summary
// or schema of the docs reaches its bundle; a test fails when a twin and the app disagree.
import type * as z from "zod/mini";
import type { $ZodType } from "zod/v4/core";
import type { ErrorCode } from "./error-codes";
import { MAX_IDEMPOTENCY_KEY_LENGTH } from "./limits";

/** Who may call a route: the generator documents what its check answers (401; an admin route's limit on failed sign-ins). */
export type Auth = "none" | "user" | "admin";

export interface SuccessResponse {
  description: string;
  body?: $ZodType;
  /** The same answer as CSV when the request's Accept asks for text/csv: its columns. */
  csv?: string;
  /** Response headers worth knowing: see RESPONSE_HEADERS. */
  headers?: readonly ResponseHeader[];
}

/** A code the route may answer, or the code with a note that holds for this route only. */
export type RouteError = ErrorCode | readonly [ErrorCode, string];

export interface RouteDoc {
  method: "get" | "post" | "put" | "patch" | "delete";
  /** In full, as src/app.ts mounts it (hono's `:param` form). */
  path: string;
  tag: "storefront" | "admin" | "lab" | "operations";
  summary: string;
  description?: string;
  auth: Auth;
  params?: z.ZodMiniObject;
  /** Query parameters. */
  query?: z.ZodMiniObject;
  /** Request headers the route reads, besides Authorization. */
  requestHeaders?: Record<string, { required: boolean; description: string }>;
  body?: { schema: $ZodType; required: boolean };
  /** Its successes (2xx); its error responses are generated from `errors` and the catalog. */
  responses: Partial<Record<200 | 201 | 202 | 204, SuccessResponse>>;
  /**
   * The example request the reference shows, where a sample of the schemas would say less (the
   * rest is sampled from the schemas: dev/generate/examples.ts). Checked against the schemas.
   */
  example?: { body?: unknown; query?: Record<string, string>; headers?: Record<string, string> };
  /**
   * The codes the route's own middleware and handler may answer, but for its auth check's: those
   * and what the app's chain adds, the generator knows (chainErrors in dev/generate/openapi.ts).
   */
  errors: readonly RouteError[];
}

/**
 * The codes only the app's chain answers, outside any operation or in front of every one: an
 * unknown path (NOT_FOUND) or method, a fault of the server's own, a CORS preflight, a Host the
 * local stack refuses. The API document lists them once, in its description, for any request,
 * rather than on every operation; the Worker tests accept them on any operation.
 */
export const OUTSIDE_OPERATIONS: readonly ErrorCode[] = [
  "NOT_FOUND",
  "METHOD_NOT_ALLOWED",
  "INTERNAL",
  "CORS_ORIGIN_DENIED",
  "HOST_NOT_ALLOWED",
];

/** hono's `/sales/:saleId` is OpenAPI's `/sales/{saleId}`. */
export const openApiPath = (honoPath: string) => honoPath.replace(/:(\w+)/g, "{$1}");

export const RESPONSE_HEADERS = {
  "Retry-After": "seconds to wait before trying again",
  "RateLimit-Limit": "the limiter's burst (draft-ietf-httpapi-ratelimit-headers)",
  "RateLimit-Remaining": "requests left now: 0 on a 429",
  "RateLimit-Reset": "seconds until a request is admitted again",
  "WWW-Authenticate": "the bearer challenge",
  ETag: 'the sale\'s version, quoted ("3"): send it as If-Match to change only that version',
  "Queue-Ticket": "a pre-queue ticket's replacement, once the draw placed it: poll with this one from now on",
} as const;
export type ResponseHeader = keyof typeof RESPONSE_HEADERS;

/** What an Idempotency-Key may be (src/http/idempotency.ts checks it). */
export const IDEMPOTENCY_KEY = `1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`;

/** limitPerUser: the isolate's free first layer, in front of a signed-in route's own work. */
export const PER_USER_BUCKET: RouteError = ["RATE_LIMITED", "the isolate's bucket per user"];

/** Routes with global limits per user and per client address (counted in Redis, failing closed). */
export const CALLER_LIMITED: readonly RouteError[] = [
  [
    "RATE_LIMITED",
    "the global limit per user and per client address, counted across every isolate, which refuses a caller in that isolate without a Redis command until its window resets",
  ],
  ["UNAVAILABLE", "the global limits fail closed: a request they cannot count is refused"],
];
