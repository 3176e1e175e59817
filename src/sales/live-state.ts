import { hashFields, type Redis } from "../redis/client";
import { LUA, runScript } from "../redis/scripts";
import { saleKeys } from "../shared/keys";
import type { Sale } from "./sale";

/**
 * Loads a sale into Redis; a no-op when it is already there, so creating a sale can be retried.
 * Also loads the hot-path script, so the crowd's first EVALSHA hits instead of thousands of
 * simultaneous NOSCRIPT misses each re-sending the source with EVAL. An archived sale is
 * never loaded again (a late retry of its create): its keys were removed for good.
 */
export async function preloadSale(redis: Redis, sale: Sale): Promise<void> {
  if (sale.archivedAt !== null) return;
  await Promise.all([
    runScript(
      redis,
      LUA.saleInit,
      [saleKeys(sale.id).meta],
      [
        sale.stock,
        sale.startsAt,
        sale.endsAt,
        sale.idSlot,
        sale.admission.rate,
        sale.admission.burst,
        sale.name,
        sale.perUserLimit,
      ].map(String),
    ),
    redis.scriptLoad(LUA.checkout),
  ]);
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
