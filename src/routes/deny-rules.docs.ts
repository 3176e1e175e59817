// The deny rules' routes, documented beside src/routes/deny-rules.ts
// (src/shared/route-docs.ts: the Worker never imports them).
import * as Bodies from "../shared/api-types";
import * as Requests from "../shared/requests";
import type { RouteDoc } from "../shared/route-docs";

export const denyRulesDocs: readonly RouteDoc[] = [
  {
    method: "get",
    path: "/admin/deny-rules",
    tag: "admin",
    summary: "Deny rules: callers refused quietly",
    description:
      "A caller a rule matches (client address or range, user id, or a part of its user agent) is answered as a person could be: at a queue join, a ticket like any other whose pass, at its turn, buys nothing (SOLD_OUT); at checkout, HUMAN_CHECK_FAILED where the sale asks for the check there, SOLD_OUT otherwise. It is counted as DENIED in the sale's stats. Rules reach every isolate within ten seconds.",
    auth: "admin",
    responses: { 200: { description: "every rule, newest first", body: Bodies.DenyRuleList } },
    errors: ["UNAVAILABLE"],
  },
  {
    method: "post",
    path: "/admin/deny-rules",
    tag: "admin",
    summary: "Add a deny rule (the same kind and value again replaces its note and expiry)",
    description:
      "An ip rule's value is an IPv4 or IPv6 address or a CIDR range (203.0.113.0/24, 2001:db8::/48), kept written one way (lower case, shortest form, a range by its network address); anything else is 400 BAD_REQUEST. An IPv6 rule covers at least the caller's ADDRESS_PREFIX_V6 prefix: a single address, or a range narrower than that, denies the whole prefix its holder may move around in.",
    auth: "admin",
    body: { schema: Requests.DenyRuleBody, required: true },
    responses: { 201: { description: "the rule, with its id", body: Bodies.DenyRuleView } },
    errors: ["BAD_REQUEST", "DENY_RULES_FULL", "UNAVAILABLE"],
  },
  {
    method: "delete",
    path: "/admin/deny-rules/:ruleId",
    tag: "admin",
    summary: "Remove a deny rule",
    auth: "admin",
    params: Requests.DenyRuleIdParam,
    responses: { 200: { description: "the rules left, newest first", body: Bodies.DenyRuleList } },
    errors: ["BAD_REQUEST", "RULE_NOT_FOUND", "UNAVAILABLE"],
  },
];
