// A sale's per-buyer keys as Redis holds them, for the tools and tests that read Redis
// directly: the sale's bucket count is in its meta hash (one bucket when it is not there).
import type { Redis } from "ioredis";
import { allBuckets, type BucketKeys, saleKeys } from "../../src/shared/keys.ts";

/** Every bucket of the sale, as many as its meta hash says. */
export async function saleBuckets(redis: Redis, saleId: string): Promise<BucketKeys[]> {
  const buckets = Number((await redis.hget(saleKeys(saleId).meta, "buckets")) ?? 1);
  return allBuckets(saleId, buckets);
}

/** One of the sale's per-buyer hashes (`which` of every bucket), read whole and merged. */
export async function mergedHash(redis: Redis, saleId: string, which: "buyers" | "passes"): Promise<Record<string, string>> {
  const parts = await Promise.all((await saleBuckets(redis, saleId)).map((b) => redis.hgetall(b[which])));
  return Object.assign({}, ...parts);
}

/** How many members the sale's outboxes hold, all buckets together. */
export async function outboxSize(redis: Redis, saleId: string): Promise<number> {
  const sizes = await Promise.all((await saleBuckets(redis, saleId)).map((b) => redis.zcard(b.outbox)));
  return sizes.reduce((n, s) => n + s, 0);
}
