import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";
import { requireAdmin } from "../http/auth";
import { ApiError, badRequest, notFound, unavailable } from "../http/errors";
import { validate } from "../http/validate";
import { redisFor } from "../redis/client";
import { preloadSale } from "../sales/live-state";
import { findSale, findSaleByIdempotencyKey, insertSale } from "../sales/repository";
import { type Sale, saleView } from "../sales/sale";
import { reconciliationReport } from "../settlement/report";
import type { AdminSaleView } from "../shared/api-types";
import { DEFAULT_ADMISSION } from "../shared/limits";
import { CreateSaleBody, SaleIdParam } from "../shared/requests";

export const adminRoutes = new Hono<AppEnv>()
  .use(requireAdmin)
  .post("/sales", validate("json", CreateSaleBody), async (c) => {
    const body = c.req.valid("json");
    const idempotencyKey = c.req.header("Idempotency-Key") ?? null;
    if (idempotencyKey !== null && (idempotencyKey.length === 0 || idempotencyKey.length > 200)) {
      throw badRequest("Idempotency-Key must be 1 to 200 characters");
    }

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
      console.warn("report failed", err);
      throw unavailable("redis cannot be reached right now");
    }
  });
