import { settlementCounts } from "../orders/repository";
import { redisFor } from "../redis/client";
import { readLiveSale } from "../sales/live-state";
import type { Sale } from "../sales/sale";
import type { ReconciliationReport } from "../shared/api-types";
import { saleKeys } from "../shared/keys";
import { outboxOrderIds } from "./outbox";

/**
 * Redis against D1 for one sale. Every minted order id is exactly one of: confirmed in D1,
 * failed in D1 (its unit released), or pending in the outbox. Outbox records already
 * settled but not yet cleared are counted once, as settled.
 */
export async function reconciliationReport(env: Env, sale: Sale): Promise<ReconciliationReport> {
  const redis = redisFor(env);
  // Issued together, these three reads travel as one auto-pipelined round trip.
  const [live, outbox, buyers] = await Promise.all([
    readLiveSale(redis, sale.id),
    outboxOrderIds(redis, sale.id),
    redis.hlen(saleKeys(sale.id).buyers),
  ]);
  const d1 = await settlementCounts(env.DB, sale.id, outbox);
  const pending = outbox.length - d1.settledStillInOutbox;
  const minted = live?.minted ?? 0;
  const reserved = live ? live.stock - live.remaining : 0;
  return {
    saleId: sale.id,
    stock: sale.stock,
    redis: {
      loaded: live !== undefined,
      remaining: live?.remaining ?? null,
      reserved,
      minted,
      buyers,
      outbox: outbox.length,
    },
    d1: { confirmed: d1.confirmed, failed: d1.failed, soldCounter: d1.soldCounter },
    pending,
    oversold: Math.max(0, reserved - sale.stock, d1.confirmed - sale.stock),
    reconciled:
      live !== undefined &&
      minted === d1.confirmed + d1.failed + pending &&
      reserved === d1.confirmed + pending &&
      buyers === reserved &&
      d1.soldCounter === d1.confirmed,
  };
}
