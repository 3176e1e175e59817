// Big keys found before they bite: a sale's largest Redis key beside Upstash's limit on one
// record (REDIS_MAX_RECORD_BYTES), which refuses every write to a key over it (checkout's
// included). The admin report shows it; past half the limit it warns, in the report and in
// the logs. How big each key grows with the crowd: docs/big-keys.md.
import type { Redis } from "../redis/client";
import { allBuckets, laneLineKeys, saleKeys } from "../shared/keys";
import { log } from "../shared/log";
import type { Sale } from "./sale";

/** Past this share of the record limit a key is a warning: the sale may not finish inside it. */
export const BIG_KEY_WARNING_SHARE = 0.5;

export interface LargestKey {
  key: string;
  /** MEMORY USAGE: Redis' estimate, sampled for big hashes and sets (what Upstash measures too). */
  bytes: number;
  /** bytes ÷ REDIS_MAX_RECORD_BYTES. */
  share: number;
}

/** Every key of a sale that can grow: the sale-wide ones, the waiting room's, each bucket's and the lanes' own lines'. */
export function growingSaleKeys(sale: Pick<Sale, "id" | "buckets" | "lanes">): string[] {
  const { meta, admission, queue, draw } = saleKeys(sale.id);
  const lines = laneLineKeys(
    sale.id,
    sale.lanes.map((l) => l.name),
    sale.buckets,
  );
  return [
    meta,
    admission,
    ...Object.values(queue),
    draw,
    ...allBuckets(sale.id, sale.buckets).flatMap((b) => Object.values(b)),
    ...lines.small,
    ...lines.perBucket,
  ];
}

/**
 * The sale's largest key now, or null when Redis holds none of them. Issued together, the
 * MEMORY USAGE reads travel in one auto-pipelined request (with whatever else the caller sends
 * in the same tick).
 */
export async function largestSaleKey(
  redis: Redis,
  sale: Pick<Sale, "id" | "buckets" | "lanes">,
  limitBytes: number,
): Promise<LargestKey | null> {
  const keys = growingSaleKeys(sale);
  const sizes = await Promise.all(keys.map((key) => redis.exec<number | null>(["MEMORY", "USAGE", key])));
  let largest: LargestKey | null = null;
  keys.forEach((key, i) => {
    const bytes = Number(sizes[i] ?? 0);
    if (bytes > 0 && bytes > (largest?.bytes ?? 0)) largest = { key, bytes, share: bytes / limitBytes };
  });
  return largest;
}

/** The report's warning about the largest key, logged as it is given; undefined under half the limit. */
export function bigKeyWarning(saleId: string, largest: LargestKey | null): string | undefined {
  if (!largest || largest.share <= BIG_KEY_WARNING_SHARE) return undefined;
  const { key, bytes, share } = largest;
  log.warn("sale key over half the Redis record limit", { saleId, key, bytes, share: Number(share.toFixed(3)) });
  return `${key} holds ${bytes} bytes, ${Math.round(share * 100)}% of the Redis record limit: writes to it are refused past 100%`;
}
