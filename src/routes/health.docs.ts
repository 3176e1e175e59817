// GET /healthz's docs, beside src/routes/health.ts (src/shared/route-docs.ts: the Worker never imports them).
import * as Bodies from "../shared/api-types";
import type { RouteDoc } from "../shared/route-docs";

export const healthDocs: readonly RouteDoc[] = [
  {
    method: "get",
    path: "/healthz",
    tag: "operations",
    summary: "The Worker answers",
    auth: "none",
    responses: { 200: { description: "alive", body: Bodies.Health } },
    errors: [],
  },
];
