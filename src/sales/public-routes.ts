import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { IsolateCache } from "../cache/isolate-cache";
import { checkoutRoutes } from "../checkout/route";
import { badRequest, notFound, unavailable } from "../http/errors";
import { redisFor } from "../redis/client";
import { type LiveSale, readLiveSale } from "./live-state";
import { SALE_ID_PATTERN, saleView } from "./sale";

/** Polling pages read from here: at most one Redis read per sale per isolate per TTL. */
const SALE_PAGE_TTL_MS = 500;
const liveSales = new IsolateCache<LiveSale | null>(SALE_PAGE_TTL_MS, 1_000);

export const saleRoutes = new Hono<AppEnv>()
  .get("/:saleId", async (c) => {
    const saleId = c.req.param("saleId");
    if (!SALE_ID_PATTERN.test(saleId)) throw badRequest("the sale id must be a positive integer");
    let live: LiveSale | null;
    try {
      // Unknown ids are cached too (as null): probing random ids cannot reach Redis faster.
      live = await liveSales.getOrLoad(saleId, async () => (await readLiveSale(redisFor(c.env), saleId)) ?? null);
    } catch (err) {
      console.warn("sale read failed", err);
      throw unavailable("the sale cannot be read right now");
    }
    if (!live) throw notFound("SALE_NOT_FOUND", "no such sale");
    c.header("Cache-Control", "public, max-age=1");
    return c.json(saleView({ id: saleId, ...live }, live.remaining, Date.now()));
  })
  .route("/", checkoutRoutes);
