import type { Redis } from "../redis/client";
import { bucketSplitOf, knownSales } from "../sales/known-sales";
import { allBuckets, type BucketKeys, type BucketSplit, buyerKeys, parsePendingRecord } from "../shared/keys";
import type { OrderMessage } from "../shared/messages";
import { decodeOrderId } from "../shared/order-id";

/**
 * Clears settled orders from their sales' outboxes and pending records, in their buyers'
 * buckets: one ZREM and one HDEL per outbox naming all its orders (Upstash bills per command,
 * and a batch is mostly one sale's), issued in one tick, so auto-pipelining sends them as one
 * round trip per batch.
 */
export async function clearOutbox(
  redis: Redis,
  db: D1Database,
  orders: Pick<OrderMessage, "orderId" | "saleId" | "userId">[],
): Promise<void> {
  if (orders.length === 0) return;
  const sales = await knownSales(
    db,
    orders.map((o) => o.saleId),
  );
  const byOutbox = new Map<string, { pending: string; orderIds: string[] }>();
  for (const o of orders) {
    const { outbox, pending } = buyerKeys(o.saleId, o.userId, bucketSplitOf(sales.get(o.saleId)));
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

/** One bucket's orders whose outbox records were last sent before `olderThanMs`, oldest first. */
async function staleInBucket(
  redis: Redis,
  saleId: string,
  keys: BucketKeys,
  olderThanMs: number,
  limit: number,
): Promise<OrderMessage[]> {
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
    // Scores move when records are re-driven; the id itself keeps the reservation time.
    const reservedAt = decodeOrderId(String(id)).unixMs;
    orders.push({ orderId: String(id), saleId, ...parsePendingRecord(String(record)), reservedAt });
  }
  return orders;
}

/**
 * The orders of a sale (split into `buckets`) whose outbox records were last sent before
 * `olderThanMs` (epoch ms, Redis time): up to `limit` from each bucket, every bucket's reads
 * issued in one tick (one auto-pipelined round trip for the ranges, one for the records).
 */
export async function staleOutboxOrders(
  redis: Redis,
  saleId: string,
  buckets: number,
  olderThanMs: number,
  limit: number,
): Promise<OrderMessage[]> {
  const perBucket = Math.max(1, Math.ceil(limit / buckets));
  const found = await Promise.all(
    allBuckets(saleId, buckets).map((keys) => staleInBucket(redis, saleId, keys, olderThanMs, perBucket)),
  );
  return found.flat();
}

/** Whether any of the sale's outbox records was last sent before `olderThanMs` (a ZCOUNT per bucket, in one tick; never creates a key). */
export async function hasStaleOutboxOrders(redis: Redis, saleId: string, buckets: number, olderThanMs: number): Promise<boolean> {
  const counts = await Promise.all(allBuckets(saleId, buckets).map((keys) => redis.zcount(keys.outbox, "-inf", olderThanMs)));
  return counts.some((n) => Number(n) > 0);
}

/**
 * Marks re-driven records as sent now, so the next run waits another threshold before
 * re-sending them. XX: a record the consumer cleared meanwhile is not brought back.
 */
export async function touchOutbox(
  redis: Redis,
  saleId: string,
  split: BucketSplit,
  orders: OrderMessage[],
  nowMs: number,
): Promise<void> {
  const byBucket = new Map<string, { score: number; member: string }[]>();
  for (const o of orders) {
    const outbox = buyerKeys(saleId, o.userId, split).outbox;
    const members = byBucket.get(outbox);
    if (members) members.push({ score: nowMs, member: o.orderId });
    else byBucket.set(outbox, [{ score: nowMs, member: o.orderId }]);
  }
  await Promise.all([...byBucket].map(([outbox, [first, ...rest]]) => first && redis.zadd(outbox, { xx: true }, first, ...rest)));
}

/** An order reserved in Redis and not settled in D1 yet. */
export interface PendingOrder {
  orderId: string;
  userId: string;
  quantity: number;
  variant: string;
}

/** Every pending order of a sale, from all its buckets (for the reconciliation report). */
export async function pendingOrders(redis: Redis, saleId: string, buckets: number): Promise<PendingOrder[]> {
  const all = await Promise.all(
    allBuckets(saleId, buckets).map((keys) => redis.hgetall(keys.pending) as unknown as Promise<string[] | null>),
  );
  const orders: PendingOrder[] = [];
  for (const flat of all) {
    for (let i = 0; flat && i < flat.length; i += 2) {
      orders.push({ orderId: String(flat[i]), ...parsePendingRecord(String(flat[i + 1])) });
    }
  }
  return orders;
}
