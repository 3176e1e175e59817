// The sale as an isolate knows it: one per-isolate copy of each sale's D1 record, read by
// checkout (its policy and bucket count before the one script call), the waiting room,
// settlement and returns (which buckets a buyer's records live in), and forgotten in one way,
// `forgetSale`, when an admin changes the sale. A crowd costs one D1 read per sale per isolate
// every few seconds, and no Redis round trip.
//
// Ten seconds: what checkout and the waiting room rely on changes only before a sale starts
// (humanCheck, the window, the bucket count) or before joining opens (the waiting room's
// settings), so an isolate is behind only for an edit in the last seconds before then, and the
// scripts refuse a call split by a stale bucket count. A reader that needs fresher (whether a
// sale Redis lost was cancelled) asks for a shorter age.
import { IsolateCache } from "../isolate/isolate-cache";
import type { KeepAlive } from "../isolate/shared-work";
import { type BucketSplit, ONE_BUCKET } from "../shared/keys";
import { findSale, findSales } from "./repository";
import type { Sale } from "./sale";

export const KNOWN_SALE_TTL_MS = 10_000;

/** A record and when D1 was read for it; `sale` null: D1 has no such sale. */
interface Known {
  sale: Sale | null;
  readAt: number;
}

/** Records with their variants and description weigh a few KB: a few hundred sales at once at most. */
const known = new IsolateCache<Known>({ ttlMs: KNOWN_SALE_TTL_MS, maxEntries: 10_000, maxBytes: 4 << 20 });

/** What else an isolate keeps of a sale and must drop with its record (see onSaleForgotten). */
const forgetters: ((saleId: string) => void)[] = [];

/** The record this isolate holds, with no D1 read: null when D1 has no such sale, undefined when not held. */
export const heldSale = (saleId: string): Sale | null | undefined => known.get(saleId)?.sale;

/**
 * The sale's record, undefined when D1 has no such sale: this isolate's copy when it is at
 * most `maxAgeMs` old, else one D1 read shared by every request asking meanwhile. Throws
 * when D1 cannot be read.
 */
export async function knownSale(
  db: D1Database,
  saleId: string,
  keepAlive: KeepAlive,
  maxAgeMs = KNOWN_SALE_TTL_MS,
): Promise<Sale | undefined> {
  const held = known.get(saleId);
  if (held && Date.now() - held.readAt > maxAgeMs) known.delete(saleId);
  const read = async (): Promise<Known> => ({ sale: (await findSale(db, saleId)) ?? null, readAt: Date.now() });
  return (await known.getOrLoad(saleId, read, keepAlive)).sale ?? undefined;
}

/**
 * The records of `saleIds` (null where D1 has none): one D1 read for those this isolate does
 * not hold, none otherwise. For settlement and returns, which handle many sales' orders at once.
 */
export async function knownSales(db: D1Database, saleIds: Iterable<string>): Promise<Map<string, Sale | null>> {
  const found = new Map<string, Sale | null>();
  const missing: string[] = [];
  for (const saleId of new Set(saleIds)) {
    const held = heldSale(saleId);
    if (held === undefined) missing.push(saleId);
    else found.set(saleId, held);
  }
  if (missing.length > 0) {
    const read = await findSales(db, missing);
    const readAt = Date.now();
    for (const saleId of missing) {
      const sale = read.get(saleId) ?? null;
      known.set(saleId, { sale, readAt });
      found.set(saleId, sale);
    }
  }
  return found;
}

/** How a sale's buyers' records are split (one bucket for a sale D1 does not hold: nothing of it to find). */
export const bucketSplitOf = (sale: Pick<Sale, "buckets" | "bucketKey"> | null | undefined): BucketSplit =>
  sale ? { count: sale.buckets, key: sale.bucketKey } : ONE_BUCKET;

/**
 * The sale changed (an edit, a change of state, a restore): this isolate reads it again, and
 * what else it keeps of the sale goes with it. Other isolates read it again within their TTL.
 */
export function forgetSale(saleId: string): void {
  known.delete(saleId);
  for (const forget of forgetters) forget(saleId);
}

/**
 * What else an isolate keeps of a sale (checkout's memo of outcomes) is forgotten with its
 * record: the entry (src/app.ts) registers it here, since src/sales/ comes before the modules
 * that keep it.
 */
export function onSaleForgotten(forget: (saleId: string) => void): void {
  forgetters.push(forget);
}
