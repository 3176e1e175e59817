import { Hono } from "hono";
import {
  type DenyRule,
  deleteDenyRule,
  forgetDenyRules,
  listDenyRules,
  MAX_DENY_RULES,
  putDenyRule,
} from "../admission/deny-rules";
import type { AppEnv } from "../http/app-env";
import { requireAdmin } from "../http/auth";
import { ApiError, badRequest } from "../http/errors";
import { validate } from "../http/validate";
import { addressRangeOf, rangeText } from "../shared/addresses";
import type { DenyRuleList, DenyRuleView } from "../shared/api-types";
import { DenyRuleBody, DenyRuleIdParam } from "../shared/requests";

const view = (rule: DenyRule): DenyRuleView => ({
  id: String(rule.id),
  kind: rule.kind,
  value: rule.value,
  note: rule.note,
  expiresAt: rule.expiresAt === null ? null : new Date(rule.expiresAt).toISOString(),
  createdAt: new Date(rule.createdAt).toISOString(),
});

const allRules = async (db: D1Database): Promise<DenyRuleList> => ({ rules: (await listDenyRules(db)).map(view) });

/**
 * GET, POST /admin/deny-rules and DELETE /admin/deny-rules/:ruleId: callers refused quietly
 * (src/admission/deny-rules.ts). A change applies in this isolate at once, in the others
 * within DENY_RULES_TTL_MS.
 */
export const denyRuleRoutes = new Hono<AppEnv>()
  .use(requireAdmin)
  .get("/", async (c) => c.json(await allRules(c.env.DB)))
  .post("/", validate("json", DenyRuleBody), async (c) => {
    const body = c.req.valid("json");
    const expiresAt = body.expiresAt === undefined ? null : Date.parse(body.expiresAt);
    if (expiresAt !== null && expiresAt <= Date.now()) throw badRequest("expiresAt: must be in the future");
    // An address or range is kept written one way, so the same range sent again is the same rule.
    const range = body.kind === "ip" ? addressRangeOf(body.value) : undefined;
    if (body.kind === "ip" && !range) throw badRequest("value: must be an IP address or a CIDR range");
    const value = range ? rangeText(range) : body.value;
    const rule = await putDenyRule(c.env.DB, { kind: body.kind, value, note: body.note, expiresAt });
    if (!rule) throw new ApiError("DENY_RULES_FULL", `at most ${MAX_DENY_RULES} deny rules are kept; delete some first`);
    forgetDenyRules();
    return c.json(view(rule), 201);
  })
  .delete("/:ruleId", validate("param", DenyRuleIdParam), async (c) => {
    if (!(await deleteDenyRule(c.env.DB, Number(c.req.valid("param").ruleId)))) throw new ApiError("RULE_NOT_FOUND");
    forgetDenyRules();
    return c.json(await allRules(c.env.DB));
  });
