// POST /admin/scheduled, documented beside src/routes/scheduled.ts
// (src/shared/route-docs.ts: the Worker never imports them).
import type { RouteDoc } from "../shared/route-docs";

export const scheduledDocs: readonly RouteDoc[] = [
  {
    method: "post",
    path: "/admin/scheduled",
    tag: "admin",
    summary: "Run the cron's jobs now (local stack only: LOOPBACK_HOSTS_ONLY=true)",
    description:
      "What the cron trigger runs every minute: the outbox re-drive, the expiry sweep and returns, order events due, the Bloom filter's upkeep, the clean-up and the recovery of sales Redis lost. npm start fires it here every minute (wrangler dev fires no cron). Only where the Worker answers loopback Host names alone (LOOPBACK_HOSTS_ONLY=true); elsewhere 404 NOT_FOUND like a route that does not exist.",
    auth: "admin",
    responses: { 204: { description: "every job ran" } },
    errors: [["NOT_FOUND", "LOOPBACK_HOSTS_ONLY is not true"]],
  },
];
