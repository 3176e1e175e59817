import { Hono, type MiddlewareHandler } from "hono";
import type { AppEnv } from "../http/app-env";
import { requireAdmin } from "../http/auth";
import { ApiError } from "../http/errors";
import { runScheduledJobs } from "../settlement/scheduled";
import { settingsOf } from "../shared/settings";

/**
 * Only where the whole Worker answers loopback Host names (LOOPBACK_HOSTS_ONLY=true, as npm
 * start runs it): elsewhere the route answers like one that does not exist.
 */
const localOnly: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!settingsOf(c.env).LOOPBACK_HOSTS_ONLY) throw new ApiError("NOT_FOUND");
  await next();
};

/**
 * POST /admin/scheduled: the cron's run, now. wrangler dev fires no cron, and its own trigger
 * (--test-scheduled's GET /__scheduled) answers before the Worker, for any Host and without a
 * token: npm start fires the cron here instead, behind the loopback fence and the admin token.
 */
export const scheduledRoutes = new Hono<AppEnv>().post("/", localOnly, requireAdmin, async (c) => {
  await runScheduledJobs(c.env);
  return c.body(null, 204);
});
