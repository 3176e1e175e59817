import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";
import { requireAdmin } from "../http/auth";
import { ApiError, notFound, unavailable } from "../http/errors";
import { assertSameRequest, type Idempotency, idempotencyOf } from "../http/idempotency";
import { validate } from "../http/validate";
import { redisFor } from "../redis/client";
import { preloadSale } from "../sales/live-state";
import { readOutcomeSeries } from "../sales/outcomes";
import { findSale, findSaleByIdempotencyKey, insertSale } from "../sales/repository";
import { adminSaleView, type Sale } from "../sales/sale";
import { reconciliationReport } from "../settlement/report";
import type { SaleStats } from "../shared/api-types";
import { DEFAULT_ADMISSION } from "../shared/limits";
import { log } from "../shared/log";
import { CreateSaleBody, SaleIdParam } from "../shared/requests";

async function recordedSale(db: D1Database, saleId: string): Promise<Sale> {
  const sale = await findSale(db, saleId);
  if (!sale) throw notFound("SALE_NOT_FOUND", "no such sale");
  return sale;
}

/** Redis unreachable (or slow) reads as 503, like everywhere else. */
async function orUnavailable<T>(what: "report" | "stats", saleId: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof ApiError) throw err;
    log.warn(`${what} failed`, { saleId }, err);
    throw unavailable("redis cannot be reached right now");
  }
}

/** The sale an earlier create with this key made; refused when that create's body differed. */
async function replayedSale(db: D1Database, idempotency: Idempotency): Promise<Sale | undefined> {
  const found = await findSaleByIdempotencyKey(db, idempotency.key);
  if (found) assertSameRequest(idempotency, found.fingerprint);
  return found?.sale;
}

export const adminRoutes = new Hono<AppEnv>()
  .use(requireAdmin)
  .post("/sales", validate("json", CreateSaleBody), async (c) => {
    const body = c.req.valid("json");
    const idempotency = await idempotencyOf(c, body);

    let sale: Sale | undefined;
    let created = false;
    if (idempotency) sale = await replayedSale(c.env.DB, idempotency);
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
          description: body.description,
          imageUrl: body.imageUrl ?? null,
        },
        idempotency,
      );
      created = sale !== undefined;
      // A concurrent retry with the same key may have won the insert.
      if (!sale && idempotency) sale = await replayedSale(c.env.DB, idempotency);
      if (!sale) throw new ApiError(409, "NO_ID_SLOT", "too many sales overlap this window; order ids have no free slot");
    }

    // D1 is the record; Redis is loaded after it. A failure here leaves a sale that a retry
    // with the same Idempotency-Key finishes loading.
    try {
      await preloadSale(redisFor(c.env), sale);
    } catch (err) {
      log.warn("sale preload failed", { saleId: sale.id }, err);
      throw unavailable("the sale was recorded but could not be loaded into Redis; retry with the same Idempotency-Key");
    }
    return c.json(adminSaleView(sale, sale.stock, Date.now()), created ? 201 : 200);
  })
  .get("/sales/:saleId/report", validate("param", SaleIdParam), async (c) => {
    const sale = await recordedSale(c.env.DB, c.req.valid("param").saleId);
    return c.json(await orUnavailable("report", sale.id, reconciliationReport(c.env, sale)));
  })
  // The admin console polls this every 2 s: one Redis round trip for the counters and the
  // report's reads (auto-pipelined together), and the report's D1 reads.
  .get("/sales/:saleId/stats", validate("param", SaleIdParam), async (c) => {
    const sale = await recordedSale(c.env.DB, c.req.valid("param").saleId);
    const now = Date.now();
    const [series, report] = await orUnavailable(
      "stats",
      sale.id,
      Promise.all([readOutcomeSeries(redisFor(c.env), sale.id, now), reconciliationReport(c.env, sale)]),
    );
    const view = adminSaleView(sale, report.redis.remaining ?? sale.stock, now);
    return c.json({ sale: view, series, report } satisfies SaleStats);
  });
