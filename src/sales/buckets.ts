// How many buckets a sale's per-buyer Redis records are split into (src/shared/keys.ts), as
// D1 records it, for the code that finds a buyer's or an order's records outside checkout:
// settlement, returns, the order route. Kept in the isolate: a count changes only before
// anyone can join or buy (src/sales/repository.ts, updateSale), when there is nothing to
// find; the scripts refuse a count that is not the sale's (an edit just before the opening),
// and the isolate reads it again within ten seconds.
import { IsolateCache } from "../isolate/isolate-cache";
import { saleBucketCounts } from "./repository";

const counts = new IsolateCache<number>({ ttlMs: 10_000, maxEntries: 10_000 });

/**
 * The bucket count of each of `saleIds`: one D1 read for those this isolate does not know
 * yet, none otherwise. A sale D1 does not hold counts one bucket (nothing of it to find).
 */
export async function bucketCounts(db: D1Database, saleIds: Iterable<string>): Promise<Map<string, number>> {
  const known = new Map<string, number>();
  const missing: string[] = [];
  for (const saleId of new Set(saleIds)) {
    const count = counts.get(saleId);
    if (count === undefined) missing.push(saleId);
    else known.set(saleId, count);
  }
  if (missing.length > 0) {
    const read = await saleBucketCounts(db, missing);
    for (const saleId of missing) {
      const count = read.get(saleId) ?? 1;
      counts.set(saleId, count);
      known.set(saleId, count);
    }
  }
  return known;
}

/** One sale's bucket count (see bucketCounts). */
export const bucketCount = async (db: D1Database, saleId: string): Promise<number> =>
  (await bucketCounts(db, [saleId])).get(saleId) ?? 1;

/** A sale changed: this isolate reads its count again (others within ten seconds). */
export const forgetBucketCount = (saleId: string) => counts.delete(saleId);
