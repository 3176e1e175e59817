import { hashFields, type Redis } from "../redis/client";
import { LUA, runScript } from "../redis/scripts";
import { saleKeys } from "../shared/keys";
import { queueOpensAt, type Sale } from "./sale";

/** The waiting room's settings as the sale's meta hash holds them (see lua/queue-progress.lua). */
export const queueMetaFields = (sale: Sale) => ({
  qmode: sale.queue.mode,
  qopens: queueOpensAt(sale),
  qrate: sale.queue.admitPerSec,
  qttl: sale.queue.passTtlSec,
});

/**
 * Brings the sale's meta hash in Redis to this record of it (lua/sale-sync.lua): loads a new
 * sale, applies a record newer than the one applied last, and changes nothing otherwise, so
 * a create or an edit can be retried. "missing": Redis lost the sale's live state, which
 * only a restore may rebuild.
 */
export async function syncSale(redis: Redis, sale: Sale): Promise<"applied" | "unchanged" | "missing"> {
  const applied = await runScript<number>(
    redis,
    LUA.saleSync,
    [saleKeys(sale.id).meta],
    [
      sale.version,
      sale.stock,
      sale.startsAt,
      sale.endsAt,
      sale.idSlot,
      sale.admission.rate,
      sale.admission.burst,
      sale.name,
      sale.perUserLimit,
      sale.state,
      ...Object.values(queueMetaFields(sale)),
      sale.buckets,
    ].map(String),
  );
  return Number(applied) === 1 ? "applied" : Number(applied) === 0 ? "unchanged" : "missing";
}

/**
 * Loads a sale into Redis, and the hot-path scripts with it (the waiting room's too, for a queued sale), so the crowd's first EVALSHA hits
 * instead of thousands of simultaneous NOSCRIPT misses each re-sending the source with EVAL.
 */
export async function preloadSale(redis: Redis, sale: Sale): Promise<"applied" | "unchanged" | "missing"> {
  const queued = sale.queue.mode !== "off" ? [LUA.queueJoin, LUA.queueProgress] : [];
  const [synced] = await Promise.all([syncSale(redis, sale), ...[LUA.checkout, ...queued].map((s) => redis.scriptLoad(s))]);
  return synced;
}

export interface LiveSale {
  name: string;
  stock: number;
  remaining: number;
  startsAt: number;
  endsAt: number;
  /** Order ids minted so far (accepted checkouts, including ones later released). */
  minted: number;
}

/** The sale as Redis holds it now, or undefined when Redis does not know the sale. */
export async function readLiveSale(redis: Redis, saleId: string): Promise<LiveSale | undefined> {
  const [name, stock, remaining, starts, ends, seq] = await hashFields(
    redis,
    saleKeys(saleId).meta,
    "name",
    "stock",
    "remaining",
    "starts",
    "ends",
    "seq",
  );
  if (remaining === null || remaining === undefined) return undefined;
  return {
    name: name ?? "",
    stock: Number(stock),
    remaining: Number(remaining),
    startsAt: Number(starts),
    endsAt: Number(ends),
    minted: Number(seq),
  };
}
