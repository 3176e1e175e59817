import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";
import { requireUser } from "../http/auth";
import { limitPerUser } from "../http/caller-limits";
import { notFound, unavailable } from "../http/errors";
import { validate } from "../http/validate";
import { findOrderRecord } from "../orders/repository";
import { redisFor } from "../redis/client";
import { findSaleBySlotAt } from "../sales/repository";
import type { OrderView } from "../shared/api-types";
import { saleKeys } from "../shared/keys";
import { decodeOrderId } from "../shared/order-id";
import { OrderIdParam } from "../shared/requests";

// Someone else's order answers exactly like a missing one: ids are not an oracle.
const orderNotFound = () => notFound("ORDER_NOT_FOUND", "no such order");

/** GET /api/orders/:orderId: its owner sees where the order is. */
export const orderRoutes = new Hono<AppEnv>().get(
  "/:orderId",
  validate("param", OrderIdParam),
  requireUser,
  limitPerUser,
  async (c) => {
    const { orderId } = c.req.valid("param");
    const userId = c.get("userId");

    const record = await findOrderRecord(c.env.DB, orderId);
    if (record) {
      if (record.userId !== userId) throw orderNotFound();
      return c.json({ orderId, saleId: record.saleId, userId, status: record.status } satisfies OrderView);
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
    return c.json({ orderId, saleId: sale.id, userId, status: "pending" } satisfies OrderView);
  },
);
