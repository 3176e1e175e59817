// What checkout must know of a sale before its one script call, and Redis does not say:
// whether the sale asks for the human check, whether it has a waiting room (then the check
// was asked at the join, and the pass carries it), and how many buckets its buyers are split
// into. Read from D1 and kept in the isolate, so a
// crowd costs one D1 read per sale per isolate every few seconds, and no Redis round trip.
import { IsolateCache } from "../isolate/isolate-cache";
import type { KeepAlive } from "../isolate/shared-work";
import { findSale } from "../sales/repository";

export interface SalePolicy {
  humanCheck: boolean;
  queued: boolean;
  /** The sale's bucket count (src/shared/keys.ts): which keys a buyer's records live in. */
  buckets: number;
}

/**
 * Ten seconds: humanCheck and buckets change only before a sale starts, its queue's mode only
 * before joining opens (src/sales/operations.ts, src/sales/repository.ts), so an isolate is
 * behind only for an edit in the last ten seconds before then (and lua/checkout.lua refuses a
 * call split by a stale bucket count).
 */
export const SALE_POLICY_TTL_MS = 10_000;

/** null: D1 has no such sale (Redis answers SALE_NOT_FOUND, as before). */
const policies = new IsolateCache<SalePolicy | null>({ ttlMs: SALE_POLICY_TTL_MS, maxEntries: 10_000 });

/** The sale's admission policy, undefined when D1 has no such sale; throws when D1 cannot be read. */
export async function salePolicy(db: D1Database, saleId: string, keepAlive: KeepAlive): Promise<SalePolicy | undefined> {
  const policy = await policies.getOrLoad(
    saleId,
    async () => {
      const sale = await findSale(db, saleId);
      return sale ? { humanCheck: sale.humanCheck, queued: sale.queue.mode !== "off", buckets: sale.buckets } : null;
    },
    keepAlive,
  );
  return policy ?? undefined;
}

/** The sale's policy as this isolate holds it, with no D1 read: null when D1 has no such sale, undefined when not held. */
export const heldSalePolicy = (saleId: string): SalePolicy | null | undefined => policies.get(saleId);

/** A sale changed: this isolate reads its policy again (others within SALE_POLICY_TTL_MS). */
export const forgetSalePolicy = (saleId: string) => policies.delete(saleId);
