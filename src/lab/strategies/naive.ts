import type { Redis } from "../../redis/client";
import { type LabKeys, labKeys } from "../keys";
import type { LabOutcome, Strategy } from "../strategy";

/**
 * The textbook first version: read the stock, check it here, write stock - 1, as separate
 * Upstash calls. Checkouts that read between another's read and write all see the same
 * stock, so units are sold more than once (lost updates); the buyer check is the same
 * read-then-write, so one user's double click can buy twice.
 * `buyers` maps user -> acceptances, so duplicates are counted instead of overwritten.
 */
export async function readCheckWrite(redis: Redis, keys: LabKeys, userId: string): Promise<LabOutcome> {
  // Issued in the same tick, the two reads travel as one auto-pipelined round trip.
  const [remaining, bought] = await Promise.all([
    redis.hget<string>(keys.meta, "remaining"),
    redis.hget<string>(keys.buyers, userId),
  ]);
  if (remaining === null) return { code: "SALE_NOT_FOUND" };
  if (bought !== null) return { code: "ALREADY_PURCHASED" };
  const stock = Number(remaining);
  if (stock <= 0) return { code: "SOLD_OUT" };
  const [, , accepted] = await Promise.all([
    redis.hset(keys.meta, { remaining: stock - 1 }),
    redis.hincrby(keys.buyers, userId, 1),
    redis.hincrby(keys.meta, "seq", 1),
  ]);
  return { code: "OK", orderId: String(accepted) };
}

export const naiveCheckout: Strategy = ({ redis }, labSaleId, userId) =>
  readCheckWrite(redis, labKeys("naive", labSaleId), userId);
