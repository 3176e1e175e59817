import type { Redis } from "../redis/client";
import { parsePendingRecord, saleKeys } from "../shared/keys";
import type { OrderMessage } from "../shared/messages";
import { decodeOrderId } from "../shared/order-id";

/**
 * Clears settled orders from their sales' outboxes and pending records: one ZREM and one
 * HDEL per outbox naming all its orders (Upstash bills per command, and a batch is mostly one
 * sale's), issued in one tick, so auto-pipelining sends them as one round trip per batch.
 */
export async function clearOutbox(redis: Redis, orders: Pick<OrderMessage, "orderId" | "saleId">[]): Promise<void> {
  const byOutbox = new Map<string, { pending: string; orderIds: string[] }>();
  for (const o of orders) {
    const { outbox, pending } = saleKeys(o.saleId);
    const same = byOutbox.get(outbox);
    if (same) same.orderIds.push(o.orderId);
    else byOutbox.set(outbox, { pending, orderIds: [o.orderId] });
  }
  await Promise.all(
    [...byOutbox].flatMap(([outbox, { pending, orderIds }]) => [
      redis.zrem(outbox, ...orderIds),
      redis.hdel(pending, ...orderIds),
    ]),
  );
}

/** The orders of a sale whose outbox records were last sent before `olderThanMs` (epoch ms, Redis time), oldest first. */
export async function staleOutboxOrders(
  redis: Redis,
  saleId: string,
  olderThanMs: number,
  limit: number,
): Promise<OrderMessage[]> {
  const keys = saleKeys(saleId);
  const ids = (await redis.zrange(keys.outbox, "-inf", olderThanMs, {
    byScore: true,
    offset: 0,
    count: limit,
  })) as unknown as string[];
  if (ids.length === 0) return [];
  const records = (await redis.hmget(keys.pending, ...ids.map(String))) as unknown as (string | null)[];
  const orders: OrderMessage[] = [];
  for (const [i, id] of ids.entries()) {
    const record = records[i];
    if (!record) continue; // settled between the two reads
    const { quantity, userId } = parsePendingRecord(String(record));
    // Scores move when records are re-driven; the id itself keeps the reservation second.
    orders.push({ orderId: String(id), saleId, userId, quantity, reservedAt: decodeOrderId(String(id)).unixSeconds * 1000 });
  }
  return orders;
}

/** Whether any of the sale's outbox records was last sent before `olderThanMs` (one ZCOUNT; never creates the key). */
export async function hasStaleOutboxOrders(redis: Redis, saleId: string, olderThanMs: number): Promise<boolean> {
  return Number(await redis.zcount(saleKeys(saleId).outbox, "-inf", olderThanMs)) > 0;
}

/**
 * Marks re-driven records as sent now, so the next run waits another threshold before
 * re-sending them. XX: a record the consumer cleared meanwhile is not brought back.
 */
export async function touchOutbox(redis: Redis, saleId: string, orders: OrderMessage[], nowMs: number): Promise<void> {
  if (orders.length === 0) return;
  const [first, ...rest] = orders.map((o) => ({ score: nowMs, member: o.orderId }));
  if (first) await redis.zadd(saleKeys(saleId).outbox, { xx: true }, first, ...rest);
}

/** An order reserved in Redis and not settled in D1 yet. */
export interface PendingOrder {
  orderId: string;
  userId: string;
  quantity: number;
}

/** Every pending order of a sale (for the reconciliation report). */
export async function pendingOrders(redis: Redis, saleId: string): Promise<PendingOrder[]> {
  const flat = (await redis.hgetall(saleKeys(saleId).pending)) as unknown as string[] | null;
  const orders: PendingOrder[] = [];
  for (let i = 0; flat && i < flat.length; i += 2) {
    orders.push({ orderId: String(flat[i]), ...parsePendingRecord(String(flat[i + 1])) });
  }
  return orders;
}
