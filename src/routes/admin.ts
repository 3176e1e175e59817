import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";
import { requireAdmin } from "../http/auth";
import { ApiError, notFound, unavailable } from "../http/errors";
import { idempotencyKeyOf } from "../http/idempotency-key";
import { validate } from "../http/validate";
import { redisFor } from "../redis/client";
import { preloadSale } from "../sales/live-state";
import { readOutcomeSeries } from "../sales/outcomes";
import { findSale, findSaleByIdempotencyKey, insertSale } from "../sales/repository";
import { adminSaleView, type Sale } from "../sales/sale";
import { reconciliationReport } from "../settlement/report";
import type { SaleStats } from "../shared/api-types";
import { DEFAULT_ADMISSION } from "../shared/limits";
import { CreateSaleBody, SaleIdParam } from "../shared/requests";

async function recordedSale(db: D1Database, saleId: string): Promise<Sale> {
  const sale = await findSale(db, saleId);
  if (!sale) throw notFound("SALE_NOT_FOUND", "no such sale");
  return sale;
}

/** Redis unreachable (or slow) reads as 503, like everywhere else. */
async function orUnavailable<T>(what: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof ApiError) throw err;
    console.warn(`${what} failed`, err);
    throw unavailable("redis cannot be reached right now");
  }
}

export const adminRoutes = new Hono<AppEnv>()
  .use(requireAdmin)
  .post("/sales", validate("json", CreateSaleBody), async (c) => {
    const body = c.req.valid("json");
    const idempotencyKey = idempotencyKeyOf(c.req.header("Idempotency-Key"), false) ?? null;

    let sale: Sale | undefined;
    let created = false;
    if (idempotencyKey) sale = await findSaleByIdempotencyKey(c.env.DB, idempotencyKey);
    if (!sale) {
      sale = await insertSale(
        c.env.DB,
        {
          name: body.name,
          stock: body.stock,
          startsAt: Date.parse(body.startsAt),
          endsAt: Date.parse(body.endsAt),
          admission: body.admission ?? { ...DEFAULT_ADMISSION },
          price: body.price,
          currency: body.currency,
          paymentWindowSec: body.paymentWindowSec,
          perUserLimit: body.perUserLimit,
        },
        idempotencyKey,
      );
      created = sale !== undefined;
      // A concurrent retry with the same key may have won the insert.
      if (!sale && idempotencyKey) sale = await findSaleByIdempotencyKey(c.env.DB, idempotencyKey);
      if (!sale) throw new ApiError(409, "NO_ID_SLOT", "too many sales overlap this window; order ids have no free slot");
    }

    // D1 is the record; Redis is loaded after it. A failure here leaves a sale that a retry
    // with the same Idempotency-Key finishes loading.
    try {
      await preloadSale(redisFor(c.env), sale);
    } catch (err) {
      console.warn("sale preload failed", err);
      throw unavailable("the sale was recorded but could not be loaded into Redis; retry with the same Idempotency-Key");
    }
    return c.json(adminSaleView(sale, sale.stock, Date.now()), created ? 201 : 200);
  })
  .get("/sales/:saleId/report", validate("param", SaleIdParam), async (c) => {
    const sale = await recordedSale(c.env.DB, c.req.valid("param").saleId);
    return c.json(await orUnavailable("report", reconciliationReport(c.env, sale)));
  })
  // The admin console polls this every 2 s: one Redis round trip for the counters and the
  // report's reads (auto-pipelined together), and the report's D1 reads.
  .get("/sales/:saleId/stats", validate("param", SaleIdParam), async (c) => {
    const sale = await recordedSale(c.env.DB, c.req.valid("param").saleId);
    const now = Date.now();
    const [series, report] = await orUnavailable(
      "stats",
      Promise.all([readOutcomeSeries(redisFor(c.env), sale.id, now), reconciliationReport(c.env, sale)]),
    );
    const view = adminSaleView(sale, report.redis.remaining ?? sale.stock, now);
    return c.json({ sale: view, series, report } satisfies SaleStats);
  });
