// Rebuilding a sale's live state in Redis from D1 after Redis lost it (a flush, a failover
// without persistence). Until then checkout answers 503 for the sale: selling from a fresh
// copy could oversell. docs/architecture.md, "Restoring a sale", says what is rebuilt and why
// it is safe.

import { restoredCodes } from "../admission/code-batches";
import { Lock, LockLostError, LockTimeoutError, lockKeys } from "../locks";
import { type RestoreSnapshot, restoreSnapshot } from "../orders/sale-order-counts";
import type { Redis } from "../redis/client";
import { LUA, runScript } from "../redis/scripts";
import { bucketSplitOf } from "../sales/known-sales";
import { admissionMetaFields, laneAllotmentFields, laneMetaFields, variantMetaFields } from "../sales/live-state";
import { findRecovery, type RecoveryRecord, recordLive } from "../sales/recovery-record";
import { findSale } from "../sales/repository";
import { accessCodeKeys, allBuckets, type BucketSplit, bucketKeys, bucketOf, CODE_SHARDS, saleKeys } from "../shared/keys";

/** The restore's lock: its keys share the sale's hash tag, so restore.lua can check the fence beside the sale's keys. */
export const restoreLockName = (saleId: string) => `sale:${saleId}`;
/** Renewed while the restore works; one at a time, a second is refused rather than queued. */
const RESTORE_LOCK = { leaseMs: 15_000, waitMs: 0, maxHoldMs: 120_000 };
/** lua/restore.lua's KEYS: the lock's fencing counter beside the sale's meta (one hash tag), then the part's keys. */
export function restoreScriptKeys(saleId: string, partKeys: string[] = []): string[] {
  return [lockKeys(restoreLockName(saleId)).fence, saleKeys(saleId).meta, ...partKeys];
}

/** Buyers or order ids per script call. */
const CHUNK = 1_000;
/** Buckets a `clear` call drops the keys of (five keys each). */
const CLEAR_BUCKETS_PER_CALL = 200;

/** `items` grouped by the bucket (of `split`) of each one's user id. */
function byBucket<T extends { userId: string }>(items: T[], split: BucketSplit): Map<number, T[]> {
  const groups = new Map<number, T[]>();
  for (const item of items) {
    const bucket = bucketOf(item.userId, split);
    const group = groups.get(bucket);
    if (group) group.push(item);
    else groups.set(bucket, [item]);
  }
  return groups;
}
/** How long the restore waits for Redis' clock to pass the second it started in. */
const CLOCK_WAIT_MS = 3_000;

export type RestoreOutcome =
  | {
      kind: "restored";
      remaining: number;
      minted: number;
      seq: number;
      buyers: number;
      returned: number;
      /** What detected the loss and when (null: nobody reported it, e.g. a manual push). */
      detectedBy: string | null;
      detectedAt: number | null;
    }
  | { kind: "not-found" }
  | { kind: "archived" }
  | { kind: "loaded" }
  | { kind: "busy" }
  | { kind: "in-flight"; retryAfterMs: number }
  | { kind: "interrupted" };

const failedWith = (err: unknown, code: string) => err instanceof Error && err.message.includes(code);

export interface RestoreOptions {
  /** Without a better signal: refused while an order of the sale reached D1 within this long. */
  quietMs: number;
  keepAlive?: (work: Promise<unknown>) => void;
}

/**
 * How long until the rebuild is safe (0: now). The signal is the order sequence: ids are
 * numbered one by one, and D1's count of the sale's ids plus the offset of the last rebuild
 * is where the sequence stands once every id minted has landed (settled or failed). So once
 * that reaches the highest sequence anyone reported minted before the loss, what was in
 * flight then is on D1's books, however long the queue took. Ids that never reach D1 (their
 * queue send failed and the outbox that would re-drive them was lost) would keep it waiting:
 * `quietMs` without a landing bounds that, and is the whole rule when nobody reported a sequence.
 */
function waitBeforeRebuildMs(snapshot: RestoreSnapshot, recovery: RecoveryRecord, quietMs: number, now: number): number {
  const sinceLanded = now - snapshot.lastLandedAt;
  const quietLeft = snapshot.lastLandedAt > 0 && sinceLanded < quietMs ? quietMs - sinceLanded : 0;
  if (recovery.knownSeq === 0 || quietLeft === 0) return quietLeft;
  return snapshot.minted + recovery.seqOffset >= recovery.knownSeq ? 0 : Math.min(quietLeft, 1_000);
}

/**
 * Rebuilds the sale from D1's record under its fenced lock: remaining = stock − units D1
 * records as held; each holder's units and latest order (the per-buyer limit holds); every
 * ended order counted as returned (its later return is a no-op); the sequence as the number
 * of ids D1 knows, with new ids minted only once Redis' clock has passed the second the
 * restore began (so none can equal an id minted before the loss); the admission bucket
 * starts full. Refused while orders of the sale were still reaching D1 within `quietMs`:
 * those accepted before the loss must land first, or their units would be sold twice.
 */
export async function restoreSale(
  db: D1Database,
  redis: Redis,
  saleId: string,
  options: RestoreOptions,
): Promise<RestoreOutcome> {
  const sale = await findSale(db, saleId);
  if (!sale) return { kind: "not-found" };
  // Archived on purpose once it ended and settled: its record lives in D1 now.
  if (sale.archivedAt !== null) return { kind: "archived" };
  const keys = saleKeys(saleId);
  if ((await redis.exists(keys.meta)) === 1) return { kind: "loaded" };
  try {
    return await new Lock(redis, restoreLockName(saleId)).using(
      async (signal, lease): Promise<RestoreOutcome> => {
        const [snapshot, recovery] = await Promise.all([restoreSnapshot(db, saleId), findRecovery(db, saleId)]);
        const waitMs = waitBeforeRebuildMs(snapshot, recovery, options.quietMs, Date.now());
        if (waitMs > 0) return { kind: "in-flight", retryAfterMs: waitMs };
        // Each part checks the fence first: once another restore took the lock, nothing more is written.
        const part = (name: string, partKeys: string[], args: (string | number)[]) => {
          signal.throwIfAborted();
          return runScript<number>(redis, LUA.restore, restoreScriptKeys(saleId, partKeys), [
            String(lease.fence),
            name,
            ...args.map(String),
          ]);
        };
        // The sale comes back split as D1 records it (the meta below names the same count).
        const buckets = allBuckets(saleId, sale.buckets);
        const codes = accessCodeKeys(saleId);
        let startedSecond = 0;
        for (let b = 0; b < buckets.length; b += CLEAR_BUCKETS_PER_CALL) {
          const dropped = buckets
            .slice(b, b + CLEAR_BUCKETS_PER_CALL)
            .flatMap((k) => [k.buyers, k.returned, k.outbox, k.pending, k.checkoutKeys]);
          const codeKeys = Array.from({ length: CODE_SHARDS }, (_, n) => codes.shard(n));
          const first = [keys.admission, codes.batches, ...codeKeys];
          const second = Number(await part("clear", b === 0 ? [...first, ...dropped] : dropped, []));
          if (b === 0) startedSecond = second;
        }
        // Each record into its buyer's bucket, CHUNK records per call.
        const intoBuckets = async <T extends { userId: string }>(
          name: "buyers" | "returned",
          items: T[],
          args: (item: T) => string[],
        ) => {
          for (const [bucket, group] of byBucket(items, bucketSplitOf(sale))) {
            const key = bucketKeys(saleId, bucket, sale.buckets)[name];
            const scriptPart = name === "buyers" ? "hash" : name;
            for (let i = 0; i < group.length; i += CHUNK) await part(scriptPart, [key], group.slice(i, i + CHUNK).flatMap(args));
          }
        };
        await intoBuckets("buyers", snapshot.holders, (h) => [h.userId, `${h.units}:${h.lastOrderId}`]);
        await intoBuckets("returned", snapshot.endedOrders, (o) => [o.orderId]);
        // A sale with lanes: its codes, each bound and spent as its orders say, and its batches' counters.
        if (sale.lanes.length > 0) {
          const counters = await restoredCodes(
            db,
            saleId,
            snapshot.codeOrders,
            sale.startsAt,
            Date.now(),
            async (shard, pairs) => {
              for (let i = 0; i < pairs.length; i += 2 * CHUNK)
                await part("hash", [codes.shard(shard)], pairs.slice(i, i + 2 * CHUNK));
            },
          );
          if (counters.length > 0) await part("hash", [codes.batches], counters);
        }
        const held = snapshot.holders.reduce((n, h) => n + h.units, 0);
        const meta = {
          version: sale.version,
          stock: sale.stock,
          remaining: sale.stock - held,
          starts: sale.startsAt,
          ends: sale.endsAt,
          slot: sale.idSlot,
          // Above every id anyone saw minted, so no isolate takes the new ids for a rollback.
          seq: Math.max(snapshot.minted + recovery.seqOffset, recovery.knownSeq),
          rate: sale.admission.rate,
          burst: sale.admission.burst,
          name: sale.name,
          limit: sale.perUserLimit,
          state: sale.state,
          ...admissionMetaFields(sale),
          buckets: sale.buckets,
          ...variantMetaFields(sale, snapshot.heldByVariant),
          ...laneMetaFields(sale),
          ...laneAllotmentFields(sale),
          ...Object.fromEntries(Object.entries(snapshot.heldByLane).map(([lane, units]) => [`ls:${lane}`, units])),
        };
        const deadline = Date.now() + CLOCK_WAIT_MS;
        for (;;) {
          try {
            await part("meta", [], [startedSecond, ...Object.entries(meta).flat()]);
            break;
          } catch (err) {
            if (!failedWith(err, "TOO_SOON") || Date.now() > deadline) throw err;
            await new Promise((r) => setTimeout(r, 200));
          }
        }
        await recordLive(db, saleId, { seqOffset: meta.seq - snapshot.minted, at: Date.now() });
        return {
          kind: "restored",
          remaining: meta.remaining,
          minted: snapshot.minted,
          seq: meta.seq,
          buyers: snapshot.holders.length,
          returned: snapshot.endedOrders.length,
          detectedBy: recovery.state === "live" ? null : recovery.detectedBy,
          detectedAt: recovery.state === "live" ? null : recovery.detectedAt,
        };
      },
      { ...RESTORE_LOCK, keepAlive: options.keepAlive },
    );
  } catch (err) {
    if (err instanceof LockTimeoutError) return { kind: "busy" };
    if (err instanceof LockLostError || failedWith(err, "STALE_FENCE")) return { kind: "interrupted" };
    if (failedWith(err, "LOADED")) return { kind: "loaded" };
    throw err;
  }
}
