import { Hono } from "hono";
import { type FunnelSql, funnelSqlOf, saleFunnel, salesFunnel } from "../analytics/funnel-queries";
import type { AppEnv } from "../http/app-env";
import { requireAdmin } from "../http/auth";
import { ApiError, orUnavailable } from "../http/errors";
import { validate } from "../http/validate";
import { findSale } from "../sales/repository";
import { FUNNEL_SALE_WINDOW_SECONDS, FUNNEL_SALES_WINDOW_SECONDS } from "../shared/funnel";
import { SaleIdParam } from "../shared/requests";
import { settingsOf } from "../shared/settings";

const UNREACHABLE = "the funnel cannot be read right now; try again shortly";

/** Where this deployment's funnel is read, or 503 ANALYTICS_UNAVAILABLE. */
function funnelSql(env: Env): FunnelSql {
  const sql = funnelSqlOf(settingsOf(env));
  if (!sql) throw new ApiError("ANALYTICS_UNAVAILABLE");
  return sql;
}

/**
 * The console's funnel charts: what Workers Analytics Engine counted of each step (joined,
 * turned away, admitted, reserved, settled, paid, expired, cancelled, returned, failed), for
 * one sale per second, and for every sale over a week. Read with SQL (src/shared/funnel.ts).
 */
export const funnelRoutes = new Hono<AppEnv>()
  .get("/sales/:saleId/funnel", requireAdmin, validate("param", SaleIdParam), async (c) => {
    const { saleId } = c.req.valid("param");
    const sql = funnelSql(c.env);
    const sale = await orUnavailable(UNREACHABLE, { saleId }, () => findSale(c.env.DB, saleId));
    if (!sale) throw new ApiError("SALE_NOT_FOUND");
    return c.json(
      await orUnavailable(UNREACHABLE, { saleId }, () => saleFunnel(sql, saleId, Date.now(), FUNNEL_SALE_WINDOW_SECONDS)),
    );
  })
  .get("/funnel", requireAdmin, async (c) => {
    const sql = funnelSql(c.env);
    return c.json(await orUnavailable(UNREACHABLE, {}, () => salesFunnel(sql, Date.now(), FUNNEL_SALES_WINDOW_SECONDS)));
  });
