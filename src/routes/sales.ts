import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";
import { notFound, unavailable } from "../http/errors";
import { validate } from "../http/validate";
import { IsolateCache } from "../isolate/isolate-cache";
import { redisFor } from "../redis/client";
import { type LiveSale, readLiveSale } from "../sales/live-state";
import { saleView } from "../sales/sale";
import { log } from "../shared/log";
import { SaleIdParam } from "../shared/requests";

/** Polling pages read from here: at most one Redis read per sale per isolate per TTL. */
const SALE_PAGE_TTL_MS = 500;
const liveSales = new IsolateCache<LiveSale | null>(SALE_PAGE_TTL_MS, 1_000);

/** GET /api/sales/:saleId: the sale page, with live remaining stock. */
export const saleRoutes = new Hono<AppEnv>().get("/:saleId", validate("param", SaleIdParam), async (c) => {
  const { saleId } = c.req.valid("param");
  let live: LiveSale | null;
  try {
    // Unknown ids are cached too (as null): probing random ids cannot reach Redis faster.
    live = await liveSales.getOrLoad(saleId, async () => (await readLiveSale(redisFor(c.env), saleId)) ?? null);
  } catch (err) {
    log.warn("sale read failed", { saleId }, err);
    throw unavailable("the sale cannot be read right now");
  }
  if (!live) throw notFound("SALE_NOT_FOUND", "no such sale");
  c.header("Cache-Control", "public, max-age=1");
  return c.json(saleView({ id: saleId, ...live }, live.remaining, Date.now()));
});
