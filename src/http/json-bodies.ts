import type { MiddlewareHandler } from "hono";
import { ApiError } from "./errors";

// The media types hono's JSON validator reads: application/json and application/*+json.
const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json$/i;

export const isJsonContentType = (contentType: string | undefined): boolean =>
  JSON_MEDIA_TYPE.test(contentType?.split(";", 1)[0]?.trim() ?? "");

/** Whether a request carries a body: one sent without may still come as an empty stream with Content-Length 0. */
export const hasBody = (request: Request): boolean => request.body !== null && request.headers.get("Content-Length") !== "0";

/**
 * Every request body the API reads is JSON: a body of another type is refused with 415 before
 * any route looks at it, where it would otherwise be ignored or misread as an empty object.
 */
export const requireJsonBodies: MiddlewareHandler = async (c, next) => {
  if (hasBody(c.req.raw) && !isJsonContentType(c.req.header("Content-Type"))) throw new ApiError("UNSUPPORTED_MEDIA_TYPE");
  await next();
};
