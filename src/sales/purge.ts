// Removing a sale's Redis keys once it is archived. Each bucket of a sale's buyers (and of its
// checkout Idempotency-Keys) can hold up to half the Redis record limit: one DEL of it blocks
// Redis for the whole free, so big keys go a chunk at a time (lua/purge-chunk.lua), within a
// budget that a run shares across its sales, and the emptied keys are unlinked at the end.
import type { Redis } from "../redis/client";
import { LUA, runScript } from "../redis/scripts";
import { allBuckets, laneLineKeys, SALE_STATS_TTL_SECONDS, saleCardKeys, saleKeys, saleStatsKey } from "../shared/keys";
import type { Sale } from "./sale";

/**
 * Members one purge command removes at most (lua/purge-chunk.lua takes up to 5,000): about a
 * millisecond of Redis' time each; chunks of 1,000 took over twice as long per command for
 * half the round trips (npm run bench -- --only big-keys).
 */
export const PURGE_CHUNK = 500;

/**
 * What one run may spend: chunk commands, wall time, and the lock it works under (an
 * aborted signal stops it between two commands). Shared by every sale of the run.
 */
export class PurgeBudget {
  /** Chunk commands spent so far. */
  commands = 0;
  /** Members removed so far. */
  removed = 0;

  constructor(
    readonly chunk: number,
    private readonly maxCommands: number,
    private readonly deadline: number,
    private readonly signal?: AbortSignal,
  ) {}

  get spent(): boolean {
    return this.commands >= this.maxCommands || Date.now() >= this.deadline || this.signal?.aborted === true;
  }
}

/** A sale as its keys are named: its id, bucket count and lanes (each may have a line of its own). */
type PurgedSale = Pick<Sale, "id" | "buckets" | "lanes">;

/** The keys that may hold many members, in the order they are emptied: every bucket's, then the lanes' lines'. */
const bigKeys = (sale: PurgedSale) => [
  ...allBuckets(sale.id, sale.buckets).flatMap((b) => [
    b.buyers,
    b.checkoutKeys,
    b.pending,
    b.outbox,
    b.returned,
    b.places,
    b.passes,
    b.live,
    b.preQueue,
    b.line,
    b.entries,
  ]),
  ...laneLines(sale).perBucket,
];

/** The keys of the lanes' own lines a sale may have (docs/lanes.md), whatever its mode: absent keys cost an EXISTS. */
const laneLines = (sale: PurgedSale) =>
  laneLineKeys(
    sale.id,
    sale.lanes.map((l) => l.name),
    sale.buckets,
  );

/**
 * The sale's per-minute outcome counters that can still exist: each expires
 * SALE_STATS_TTL_SECONDS after its last write, and is only written during its own minute
 * (by an isolate's clock), so only the minutes of the last TTL can be left (two minutes
 * either side for clocks that differ). The sale's own window expired long before.
 */
function liveStatsKeys(saleId: string, now: number): string[] {
  const last = Math.floor(now / 60_000) + 2;
  const first = last - Math.ceil(SALE_STATS_TTL_SECONDS / 60) - 4;
  const keys: string[] = [];
  for (let minute = first; minute <= last; minute++) keys.push(saleStatsKey(saleId, minute));
  return keys;
}

/**
 * Removes every Redis key of the sale, as far as `budget` allows; true when all are gone.
 * Safe to run again after a crash or an exhausted budget: it starts over where the keys are.
 *
 * The meta hash goes first: from then on every script treats the sale as absent
 * (checkout.lua refuses with SALE_NOT_FOUND, return.lua changes nothing), so nothing writes
 * the other keys back while they are emptied, and readers know to use the archive.
 * `otherKeys` (in another hash slot, e.g. a lock's fencing counter) are unlinked at the end.
 */
export async function purgeSaleKeys(
  redis: Redis,
  sale: PurgedSale,
  budget: PurgeBudget,
  otherKeys: string[] = [],
): Promise<boolean> {
  const saleId = sale.id;
  const keys = saleKeys(saleId);
  await redis.unlink(keys.meta);
  // Which of them exist, asked in one tick (one auto-pipelined round trip): a sale of many
  // buckets leaves most of its waiting-room keys unwritten.
  const candidates = bigKeys(sale);
  const exists = await Promise.all(candidates.map((key) => redis.exists(key)));
  for (const key of candidates.filter((_, i) => Number(exists[i]) > 0)) {
    let cursor = "0";
    for (;;) {
      if (budget.spent) return false;
      const [next, removed, exists] = await runScript<unknown[]>(redis, LUA.purgeChunk, [key], [cursor, String(budget.chunk)]);
      budget.commands++;
      budget.removed += Number(removed);
      if (Number(exists) === 0) break;
      cursor = String(next);
    }
  }
  // What is left is small: the admission bucket, the counters, keys emptied meanwhile.
  // One UNLINK per hash slot: the sale's keys share one, a cluster refuses to mix them.
  await Promise.all([
    redis.unlink(
      keys.admission,
      keys.queue.counters,
      keys.queue.drawSizes,
      ...laneLines(sale).small,
      keys.draw,
      ...candidates,
      ...liveStatsKeys(saleId, Date.now()),
      // The cached card and its eviction floor (they would expire by themselves).
      ...Object.values(saleCardKeys(saleId)),
    ),
    ...otherKeys.map((key) => redis.unlink(key)),
  ]);
  return true;
}
