import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";
import { requireAdmin, requireUser } from "../http/auth";
import { ApiError } from "../http/errors";
import { limitGlobally, limitPerUser } from "../http/limits";
import { orderIdsOf } from "../http/secrets";
import { validate } from "../http/validate";
import { listBuyerOrders, listSaleOrders, orderDetail, saleOrdersCsv } from "../orders/order-lists";
import { findSale } from "../sales/repository";
import { BuyerOrdersQuery, DEFAULT_ORDER_PAGE, OrderExportQuery, SaleOrdersQuery } from "../shared/order-queries";
import { OrderIdParam, SaleIdParam } from "../shared/requests";

async function assertSale(db: D1Database, saleId: string): Promise<void> {
  if (!(await findSale(db, saleId))) throw new ApiError("SALE_NOT_FOUND");
}

/** GET /api/orders: the signed-in buyer's orders across sales, newest first. */
export const buyerOrderRoutes = new Hono<AppEnv>().get(
  "/",
  validate("query", BuyerOrdersQuery),
  requireUser,
  limitPerUser,
  limitGlobally("order-reads"),
  async (c) =>
    c.json(await listBuyerOrders(c.env.DB, c.get("userId"), c.req.valid("query").cursor, DEFAULT_ORDER_PAGE, orderIdsOf(c.env))),
);

/** The admin's order lists: a sale's orders (and as CSV), one order with its history. */
export const adminOrderRoutes = new Hono<AppEnv>()
  .use(requireAdmin)
  .get("/sales/:saleId/orders", validate("param", SaleIdParam), validate("query", SaleOrdersQuery), async (c) => {
    const { saleId } = c.req.valid("param");
    const { status, cursor, limit } = c.req.valid("query");
    const ids = orderIdsOf(c.env);
    await assertSale(c.env.DB, saleId);
    return c.json(
      await listSaleOrders(c.env.DB, saleId, { status, cursor, limit: limit ? Number(limit) : DEFAULT_ORDER_PAGE }, ids),
    );
  })
  .get("/sales/:saleId/orders.csv", validate("param", SaleIdParam), validate("query", OrderExportQuery), async (c) => {
    const { saleId } = c.req.valid("param");
    const ids = orderIdsOf(c.env);
    await assertSale(c.env.DB, saleId);
    return c.body(saleOrdersCsv(c.env.DB, saleId, c.req.valid("query").status, ids), 200, {
      "Content-Type": "text/csv; charset=utf-8",
      "Content-Disposition": `attachment; filename="sale-${saleId}-orders.csv"`,
    });
  })
  .get("/orders/:orderId", validate("param", OrderIdParam), async (c) => {
    const ids = orderIdsOf(c.env);
    const detail = await orderDetail(c.env.DB, await ids.toInternal(c.req.valid("param").orderId), ids);
    if (!detail) throw new ApiError("ORDER_NOT_FOUND");
    return c.json(detail);
  });
