import { countOrdersInFunnel } from "../analytics/funnel";
import type { Redis } from "../redis/client";
import { LUA, runScript } from "../redis/scripts";
import { bucketSplitOf, knownSales } from "../sales/known-sales";
import { accessCodeKeys, buyerKeys, codeShardOf, saleKeys } from "../shared/keys";

/** An order whose units go back on sale: dead-lettered, expired or cancelled. */
export interface UnitsToReturn {
  orderId: string;
  saleId: string;
  userId: string;
  quantity: number;
  /** The variant the units go back to ("default": the sale without variants). */
  variant: string;
  /** Bought in a presale lane: the units go back to its allotment, the use to the code (docs/lanes.md). */
  lane?: string;
  accessCode?: string;
}

export interface Returned<T> {
  /** Orders whose units came back now. */
  now: T[];
  /** Orders whose units are back, now or before: everything but those of sales Redis does not hold. */
  done: T[];
}

/**
 * Gives orders' units back to their sales and takes them off their buyers' holds
 * (lua/return.lua, idempotent per order: each order's units come back once, however often
 * this runs), in the bucket of each order's buyer. All scripts are issued in one tick, so
 * auto-pipelining sends them as one round trip. Throws when Redis or D1 (the sales' bucket
 * counts, when this isolate does not know them yet) cannot be reached, and then the caller
 * leaves them for a retry.
 */
export async function returnUnits<T extends UnitsToReturn>(redis: Redis, db: D1Database, orders: T[]): Promise<Returned<T>> {
  const sales = await knownSales(
    db,
    orders.map((o) => o.saleId),
  );
  const results = await Promise.all(
    orders.map((o) => {
      const split = bucketSplitOf(sales.get(o.saleId));
      const bucket = buyerKeys(o.saleId, o.userId, split);
      const codes = accessCodeKeys(o.saleId);
      const code = o.lane !== undefined && o.accessCode !== undefined ? o.accessCode : undefined;
      return runScript<number>(
        redis,
        LUA.return,
        [
          saleKeys(o.saleId).meta,
          bucket.buyers,
          bucket.outbox,
          bucket.pending,
          bucket.returned,
          ...(code === undefined ? [] : [codes.shard(codeShardOf(code)), codes.batches]),
        ],
        [
          o.orderId,
          o.userId,
          String(o.quantity),
          String(split.count),
          o.variant,
          ...(code === undefined ? [] : [o.lane as string, code]),
        ],
      );
    }),
  );
  const now = orders.filter((_, i) => Number(results[i]) === 1);
  countOrdersInFunnel("returned", now);
  return { now, done: orders.filter((_, i) => Number(results[i]) >= 0) };
}
