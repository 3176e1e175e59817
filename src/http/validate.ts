import { zValidator } from "@hono/zod-validator";
import type { Context, ValidationTargets } from "hono";
import * as z from "zod/mini";
import type { $ZodIssue, $ZodType } from "zod/v4/core";
import { ApiError, badRequest } from "./errors";
import { hasBody, isJsonContentType } from "./json-bodies";

/** The API's 400 for a failed validation: its first issue, named by its field unless told not to. */
export function invalid(issues: readonly $ZodIssue[], { nameField = true } = {}): ApiError {
  const issue = issues[0];
  const where = nameField && issue?.path.length ? `${issue.path.join(".")}: ` : "";
  return badRequest(`${where}${issue?.message ?? "invalid request"}`);
}

/**
 * @hono/zod-validator with failures turned into the API's one error shape. A body field is
 * named in the message (`stock: ...`); a path parameter's message stands on its own. A JSON
 * body is required to come as JSON (415 otherwise): hono's validator would read any other
 * type, or none, as an empty object and answer with a confusing field error.
 */
export const validate = <T extends $ZodType, Target extends keyof ValidationTargets>(target: Target, schema: T) => {
  const validator = zValidator(target, schema, (result) => {
    if (!result.success) throw invalid(result.error.issues, { nameField: target !== "param" });
  });
  if (target === "param") {
    // Every checkout's first step: parsed in step, without the library's asynchronous parse
    // and hook (a few percent of a refusal's CPU), to the same validated data and 400.
    return (async (c, next) => {
      const result = z.safeParse(schema, c.req.param());
      if (!result.success) throw invalid(result.error.issues, { nameField: false });
      c.req.addValidatedData("param", result.data as object);
      await next();
    }) as typeof validator;
  }
  if (target !== "json") return validator;
  return (async (c, next) => {
    if (!isJsonContentType(c.req.header("Content-Type"))) throw new ApiError("UNSUPPORTED_MEDIA_TYPE");
    return validator(c, next);
  }) as typeof validator;
};

/**
 * A body that may be left out (a checkout's, a draw's entry, an admission hold's message):
 * none, or only white space, reads as `{}`; anything else must be JSON of `schema` (400
 * otherwise). Its type was checked by requireJsonBodies.
 */
export function parseOptionalBody<T extends $ZodType>(text: string, schema: T): z.output<T> {
  let parsed: unknown = {};
  if (text.trim() !== "") {
    try {
      parsed = JSON.parse(text);
    } catch {
      throw badRequest("the request body is not valid JSON");
    }
  }
  const result = z.safeParse(schema, parsed);
  if (!result.success) throw invalid(result.error.issues);
  return result.data;
}

/** The request's optional body (parseOptionalBody). */
export const optionalBody = async <T extends $ZodType>(c: Context, schema: T): Promise<z.output<T>> =>
  parseOptionalBody(hasBody(c.req.raw) ? await c.req.text() : "", schema);
