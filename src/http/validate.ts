import { zValidator } from "@hono/zod-validator";
import type { ValidationTargets } from "hono";
import type { $ZodType } from "zod/v4/core";
import { badRequest, unsupportedMediaType } from "./errors";
import { isJsonContentType } from "./json-bodies";

/**
 * @hono/zod-validator with failures turned into the API's one error shape. A body field is
 * named in the message (`stock: ...`); a path parameter's message stands on its own. A JSON
 * body is required to come as JSON (415 otherwise): hono's validator would read any other
 * type, or none, as an empty object and answer with a confusing field error.
 */
export const validate = <T extends $ZodType, Target extends keyof ValidationTargets>(target: Target, schema: T) => {
  const validator = zValidator(target, schema, (result) => {
    if (!result.success) {
      const issue = result.error.issues[0];
      const where = target !== "param" && issue?.path.length ? `${issue.path.join(".")}: ` : "";
      throw badRequest(`${where}${issue?.message ?? "invalid request"}`);
    }
  });
  if (target !== "json") return validator;
  return (async (c, next) => {
    if (!isJsonContentType(c.req.header("Content-Type"))) throw unsupportedMediaType();
    return validator(c, next);
  }) as typeof validator;
};
