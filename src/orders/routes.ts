import { Hono } from "hono";
import type { AppEnv } from "../app-env";
import { requireUser } from "../http/auth";
import { badRequest, notFound, unavailable } from "../http/errors";
import { limitPerUser } from "../limits/callers";
import { redisFor } from "../redis/client";
import { saleKeys } from "../redis/keys";
import { findSaleBySlotAt } from "../sales/repository";
import { findOrderRecord } from "../settlement/d1-orders";
import { decodeOrderId, isOrderId } from "./order-id";

export type OrderStatus = "pending" | "confirmed" | "failed";

// Someone else's order answers exactly like a missing one: ids are not an oracle.
const orderNotFound = () => notFound("ORDER_NOT_FOUND", "no such order");

export const orderRoutes = new Hono<AppEnv>().get("/:orderId", requireUser, limitPerUser, async (c) => {
  const orderId = c.req.param("orderId");
  if (!isOrderId(orderId)) throw badRequest("the order id must be a decimal 64-bit integer");
  const userId = c.get("userId");

  const record = await findOrderRecord(c.env.DB, orderId);
  if (record) {
    if (record.userId !== userId) throw orderNotFound();
    return c.json({ orderId, saleId: record.saleId, userId, status: record.status satisfies OrderStatus });
  }

  // Not settled yet: the id names its sale (slot + time), and Redis knows its buyer.
  const { slot, unixSeconds } = decodeOrderId(orderId);
  const sale = await findSaleBySlotAt(c.env.DB, slot, unixSeconds * 1000);
  if (!sale) throw orderNotFound();
  let held: string | null;
  try {
    held = await redisFor(c.env).hget<string>(saleKeys(sale.id).buyers, userId);
  } catch {
    throw unavailable("order status cannot be read right now");
  }
  if (held !== orderId) throw orderNotFound();
  return c.json({ orderId, saleId: sale.id, userId, status: "pending" satisfies OrderStatus });
});
