import type { Redis } from "../redis/client";
import { LUA, runScript } from "../redis/scripts";
import { outboxMember, parseOutboxMember, saleKeys } from "../shared/keys";
import type { OrderMessage } from "../shared/messages";
import { decodeOrderId } from "../shared/order-id";

/**
 * Clears settled orders from their sales' outboxes. One ZREM per order, all issued in the
 * same tick: auto-pipelining sends them as one Upstash round trip per batch.
 */
export async function clearOutbox(redis: Redis, orders: Pick<OrderMessage, "orderId" | "saleId" | "userId">[]): Promise<void> {
  await Promise.all(orders.map((o) => redis.zrem(saleKeys(o.saleId).outbox, outboxMember(o.orderId, o.userId))));
}

/**
 * Undoes the reservation of an order recorded as failed (lua/release.lua, idempotent): its
 * unit goes back to stock, its buyer may buy again, its outbox record goes. Returns whether
 * anything was released.
 */
export async function releaseReservation(
  redis: Redis,
  order: Pick<OrderMessage, "orderId" | "saleId" | "userId">,
): Promise<boolean> {
  const keys = saleKeys(order.saleId);
  const released = await runScript<number>(
    redis,
    LUA.release,
    [keys.meta, keys.buyers, keys.outbox],
    [order.orderId, order.userId],
  );
  return Number(released) === 1;
}

/** Outbox records last sent before `olderThanMs` (epoch ms; scores are Redis time, so allow for skew), oldest first. */
export async function staleOutboxOrders(
  redis: Redis,
  saleId: string,
  olderThanMs: number,
  limit: number,
): Promise<OrderMessage[]> {
  const raw = (await redis.zrange(saleKeys(saleId).outbox, "-inf", olderThanMs, {
    byScore: true,
    offset: 0,
    count: limit,
  })) as unknown as string[];
  const orders: OrderMessage[] = [];
  for (const member of raw) {
    const { orderId, userId } = parseOutboxMember(String(member));
    // Scores move when records are re-driven; the id itself keeps the reservation second.
    orders.push({ orderId, saleId, userId, reservedAt: decodeOrderId(orderId).unixSeconds * 1000 });
  }
  return orders;
}

/**
 * Marks re-driven records as sent now, so the next run waits another threshold before
 * re-sending them. XX: a record the consumer cleared meanwhile is not brought back.
 */
export async function touchOutbox(redis: Redis, saleId: string, orders: OrderMessage[], nowMs: number): Promise<void> {
  if (orders.length === 0) return;
  const [first, ...rest] = orders.map((o) => ({ score: nowMs, member: outboxMember(o.orderId, o.userId) }));
  if (first) await redis.zadd(saleKeys(saleId).outbox, { xx: true }, first, ...rest);
}

/** Every order still in the outbox (for the reconciliation report). */
export async function outboxOrderIds(redis: Redis, saleId: string): Promise<string[]> {
  const members = (await redis.zrange(saleKeys(saleId).outbox, 0, -1)) as unknown as string[];
  return members.map((m) => parseOutboxMember(String(m)).orderId);
}
