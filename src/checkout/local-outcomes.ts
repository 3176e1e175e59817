import type { KeepAlive } from "../isolate/shared-work";
import type { Redis } from "../redis/client";
import { SALE_STATS_TTL_SECONDS, saleStatsKey } from "../shared/keys";
import { log } from "../shared/log";
import type { CountedOutcome } from "../shared/refusal";

/**
 * Counts the refusals this isolate answers on its own (Redis never sees them) into the
 * sale's per-second outcome counters, so the admin console's time series counts every
 * isolate's traffic. Counts wait in memory and go out in one pipelined write a second after
 * the first of them, from the waitUntil of the request that counted it: a refusal costs no
 * round trip of its own, and an isolate refusing a whole crowd writes once a second.
 */
const FLUSH_AFTER_MS = 1_000;

/** saleId -> "<epoch second>:<code>" -> count */
let counts = new Map<string, Map<string, number>>();
let flushing = false;

export function countLocalRefusal(
  redis: Redis,
  saleId: string,
  code: CountedOutcome,
  keepAlive: KeepAlive,
  now = Date.now(),
): void {
  let sale = counts.get(saleId);
  if (!sale) {
    sale = new Map();
    counts.set(saleId, sale);
  }
  const field = `${Math.floor(now / 1000)}:${code}`;
  sale.set(field, (sale.get(field) ?? 0) + 1);
  if (flushing) return;
  flushing = true;
  keepAlive(new Promise((resolve) => setTimeout(resolve, FLUSH_AFTER_MS)).then(() => flush(redis)));
}

async function flush(redis: Redis): Promise<void> {
  const batch = counts;
  counts = new Map();
  flushing = false;
  const writes: Promise<unknown>[] = [];
  for (const [saleId, fields] of batch) {
    const minutes = new Set<number>();
    for (const [field, n] of fields) {
      const minute = Math.floor(Number(field.slice(0, field.indexOf(":"))) / 60);
      minutes.add(minute);
      writes.push(redis.hincrby(saleStatsKey(saleId, minute), field, n));
    }
    for (const minute of minutes) writes.push(redis.expire(saleStatsKey(saleId, minute), SALE_STATS_TTL_SECONDS));
  }
  // Issued in one tick: auto-pipelining sends them as one round trip. Counters are a view,
  // not a record: a failed write loses a second of them and nothing else.
  await Promise.all(writes).catch((err) => log.warn("local refusal counters not written", {}, err));
}
