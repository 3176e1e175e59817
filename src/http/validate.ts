import { zValidator } from "@hono/zod-validator";
import type { ValidationTargets } from "hono";
import type { $ZodType } from "zod/v4/core";
import { badRequest } from "./errors";

/**
 * @hono/zod-validator with failures turned into the API's one error shape. A body field is
 * named in the message (`stock: ...`); a path parameter's message stands on its own.
 */
export const validate = <T extends $ZodType, Target extends keyof ValidationTargets>(target: Target, schema: T) =>
  zValidator(target, schema, (result) => {
    if (!result.success) {
      const issue = result.error.issues[0];
      const where = target !== "param" && issue?.path.length ? `${issue.path.join(".")}: ` : "";
      throw badRequest(`${where}${issue?.message ?? "invalid request"}`);
    }
  });
