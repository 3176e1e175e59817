// The funnel's routes, documented beside src/routes/funnel.ts
// (src/shared/route-docs.ts: the Worker never imports them).
import * as Bodies from "../shared/api-types";
import * as Requests from "../shared/requests";
import type { RouteDoc } from "../shared/route-docs";

const FROM_ANALYTICS =
  "Read from Workers Analytics Engine with SQL (the FUNNEL binding's dataset: over the SQL API with ANALYTICS_ACCOUNT_ID and ANALYTICS_API_TOKEN, or the local stand-in under ANALYTICS_STAND_IN_URL). Steps: joined, turned_away (quietly), admitted, reserved, settled, paid, expired, cancelled, returned, failed; counts are buyers or orders.";

export const funnelDocs: readonly RouteDoc[] = [
  {
    method: "get",
    path: "/admin/sales/:saleId/funnel",
    tag: "admin",
    summary: "A sale's funnel per second over the last 15 minutes, and its totals",
    description: FROM_ANALYTICS,
    auth: "admin",
    params: Requests.SaleIdParam,
    responses: { 200: { description: "the steps counted per second", body: Bodies.FunnelSeries } },
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "ANALYTICS_UNAVAILABLE", "UNAVAILABLE"],
  },
  {
    method: "get",
    path: "/admin/funnel",
    tag: "admin",
    summary: "Every sale's funnel over the last 7 days",
    description: FROM_ANALYTICS,
    auth: "admin",
    responses: { 200: { description: "the steps counted per sale", body: Bodies.SalesFunnel } },
    errors: ["ANALYTICS_UNAVAILABLE", "UNAVAILABLE"],
  },
];
