import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";
import { requireAdmin } from "../http/auth";
import { ApiError, notFound, unavailable } from "../http/errors";
import { assertSameRequest, type Idempotency, idempotencyOf } from "../http/idempotency";
import { validate } from "../http/validate";
import { redisFor } from "../redis/client";
import { preloadSale } from "../sales/live-state";
import { findSale, findSaleByIdempotencyKey, insertSale } from "../sales/repository";
import { type Sale, saleView } from "../sales/sale";
import { reconciliationReport } from "../settlement/report";
import type { AdminSaleView } from "../shared/api-types";
import { DEFAULT_ADMISSION } from "../shared/limits";
import { log } from "../shared/log";
import { CreateSaleBody, SaleIdParam } from "../shared/requests";

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
    const view: AdminSaleView = { ...saleView(sale, sale.stock, Date.now()), admission: sale.admission };
    return c.json(view, created ? 201 : 200);
  })
  .get("/sales/:saleId/report", validate("param", SaleIdParam), async (c) => {
    const { saleId } = c.req.valid("param");
    const sale = await findSale(c.env.DB, saleId);
    if (!sale) throw notFound("SALE_NOT_FOUND", "no such sale");
    try {
      return c.json(await reconciliationReport(c.env, sale));
    } catch (err) {
      if (err instanceof ApiError) throw err;
      log.warn("report failed", { saleId }, err);
      throw unavailable("redis cannot be reached right now");
    }
  });
