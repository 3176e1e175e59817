import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";
import { notFound, unavailable } from "../http/errors";
import { validate } from "../http/validate";
import { IsolateCache } from "../isolate/isolate-cache";
import { redisFor } from "../redis/client";
import { readLiveSale } from "../sales/live-state";
import { findSale } from "../sales/repository";
import { type Sale, saleView } from "../sales/sale";
import { log } from "../shared/log";
import { SaleIdParam } from "../shared/requests";

/** Polling pages read from here: at most one read per sale per isolate per TTL. */
const SALE_PAGE_TTL_MS = 500;
const salePages = new IsolateCache<{ sale: Sale; remaining: number } | null>(SALE_PAGE_TTL_MS, 1_000);

/** GET /api/sales/:saleId: the sale page, with live remaining stock. */
export const saleRoutes = new Hono<AppEnv>().get("/:saleId", validate("param", SaleIdParam), async (c) => {
  const { saleId } = c.req.valid("param");
  let page: { sale: Sale; remaining: number } | null;
  try {
    // Unknown ids are cached too (as null): probing random ids cannot reach D1 faster.
    page = await salePages.getOrLoad(saleId, async () => {
      const [sale, live] = await Promise.all([findSale(c.env.DB, saleId), readLiveSale(redisFor(c.env), saleId)]);
      return sale && live ? { sale, remaining: live.remaining } : null;
    });
  } catch (err) {
    log.warn("sale read failed", { saleId }, err);
    throw unavailable("the sale cannot be read right now");
  }
  if (!page) throw notFound("SALE_NOT_FOUND", "no such sale");
  c.header("Cache-Control", "public, max-age=1");
  return c.json(saleView(page.sale, page.remaining, Date.now()));
});
