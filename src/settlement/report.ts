import { settlementCounts } from "../orders/repository";
import { redisFor } from "../redis/client";
import { readLiveSale } from "../sales/live-state";
import type { Sale } from "../sales/sale";
import type { ReconciliationReport } from "../shared/api-types";
import { saleKeys } from "../shared/keys";
import { pendingOrders } from "./outbox";

/**
 * Redis against D1 for one sale. Every minted order id is in exactly one state: pending (in
 * the outbox, not in D1 yet), or one of D1's (awaiting payment, paid, confirmed, expired,
 * cancelled, failed). The units Redis has taken (stock − remaining) are exactly those of the
 * orders that hold units: pending, awaiting payment, paid, confirmed; every expired,
 * cancelled or failed order's units are back. Outbox records already settled but not yet
 * cleared are counted once, as settled.
 */
export async function reconciliationReport(env: Env, sale: Sale): Promise<ReconciliationReport> {
  const redis = redisFor(env);
  const keys = saleKeys(sale.id);
  // Issued together, these reads travel as one auto-pipelined round trip.
  const [live, outboxRecords, pendingRecords, buyers, returned] = await Promise.all([
    readLiveSale(redis, sale.id),
    redis.zcard(keys.outbox),
    pendingOrders(redis, sale.id),
    redis.hlen(keys.buyers),
    redis.scard(keys.returned),
  ]);
  const d1 = await settlementCounts(
    env.DB,
    sale.id,
    pendingRecords.map((o) => o.orderId),
    [...new Set(pendingRecords.map((o) => o.userId))],
  );
  // Records of orders D1 already has are settled; the consumer clears them a moment later.
  const pendingCount = pendingRecords.length - d1.settledOfThese.orders;
  const pendingUnits = pendingRecords.reduce((n, o) => n + o.quantity, 0) - d1.settledOfThese.units;
  const { states } = d1;
  const held = pendingUnits + states.awaiting_payment.units + states.paid.units + states.confirmed.units;
  const ended = states.expired.orders + states.cancelled.orders + states.failed.orders;
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
      outbox: outboxRecords,
      returned,
    },
    d1: {
      confirmed: states.confirmed.orders,
      failed: states.failed.orders,
      soldCounter: d1.soldCounter,
      awaitingPayment: states.awaiting_payment.orders,
      paid: states.paid.orders,
      expired: states.expired.orders,
      cancelled: states.cancelled.orders,
      buyers: d1.buyers,
    },
    states: { pending: { orders: pendingCount, units: pendingUnits }, ...states },
    pending: pendingCount,
    returnsPending: d1.returnsPending,
    refundsDue: d1.refundsDue,
    oversold: Math.max(0, reserved - sale.stock, d1.soldCounter - sale.stock),
    reconciled:
      live !== undefined &&
      minted === pendingCount + ended + states.awaiting_payment.orders + states.paid.orders + states.confirmed.orders &&
      reserved === held &&
      d1.soldCounter === held - pendingUnits &&
      buyers === d1.buyers &&
      d1.returnsPending === 0 &&
      returned === ended,
  };
}
