import { type SettlementCounts, settlementCounts } from "../orders/sale-order-counts";
import { redisFor } from "../redis/client";
import { findSaleArchive, type SaleArchive } from "../sales/archives";
import { bigKeyWarning, type LargestKey, largestSaleKey } from "../sales/big-keys";
import { readLiveSale } from "../sales/live-state";
import { failedByRollback, findRecovery, type RecoveryRecord } from "../sales/recovery-record";
import { type Sale, saleVariants } from "../sales/sale";
import type { ReconciliationReport, SaleHealth } from "../shared/api-types";
import { allBuckets } from "../shared/keys";
import { settingsOf } from "../shared/settings";
import { type PendingOrder, pendingOrders } from "./outbox";

/** What the report reads from Redis: live, or as archived when the sale's keys were removed. */
interface RedisFigures {
  /** Redis holds the sale's live state now. */
  loaded: boolean;
  /** Live or archived figures exist (false: Redis lost the sale and nothing was archived). */
  known: boolean;
  stock: number;
  remaining: number | null;
  /** Each variant's remaining, for a sale with variants, live or archived (empty otherwise). */
  remainingByVariant: Record<string, number>;
  minted: number;
  buyers: number;
  outbox: number;
  returned: number;
  pending: PendingOrder[];
  archivedAt: number | null;
  /** The sale's largest key now (null once archived, or when Redis holds none of its keys). */
  largestKey: LargestKey | null;
}

const archivedFigures = (sale: Sale, archive: SaleArchive): RedisFigures => ({
  loaded: false,
  known: true,
  stock: sale.stock,
  remaining: archive.remaining,
  remainingByVariant: archive.remainingByVariant,
  minted: archive.minted,
  buyers: archive.buyers,
  // A sale is archived only with nothing left to settle.
  outbox: 0,
  returned: archive.returned,
  pending: [],
  archivedAt: archive.archivedAt,
  largestKey: null,
});

/** The sum of counts read from every bucket. */
const total = async (counts: Promise<number>[]): Promise<number> =>
  (await Promise.all(counts)).reduce((n, c) => n + Number(c), 0);

/**
 * The sale's figures as Redis holds them, or as archived. Once the sale is archived Redis
 * is not asked at all. The meta hash is read last: the clean-up removes it before any
 * other key, so a meta still there means the reads before it saw every key whole; a meta
 * gone sends the report to the archive (a clean-up under way), or says Redis lost the sale.
 */
async function redisFigures(env: Env, sale: Sale): Promise<RedisFigures> {
  if (sale.archivedAt !== null) {
    const archive = await findSaleArchive(env.DB, sale.id);
    if (archive) return archivedFigures(sale, archive);
  }
  const redis = redisFor(env);
  const buckets = allBuckets(sale.id, sale.buckets);
  // Issued together, these reads travel as one auto-pipelined round trip, in this order.
  const [outbox, pending, buyers, returned, largestKey, live] = await Promise.all([
    total(buckets.map((b) => redis.zcard(b.outbox))),
    pendingOrders(redis, sale.id, sale.buckets),
    total(buckets.map((b) => redis.hlen(b.buyers))),
    total(buckets.map((b) => redis.scard(b.returned))),
    largestSaleKey(redis, sale, settingsOf(env).REDIS_MAX_RECORD_BYTES),
    readLiveSale(redis, sale.id),
  ]);
  if (live) {
    const { stock, remaining, minted } = live;
    return {
      loaded: true,
      known: true,
      stock,
      remaining,
      remainingByVariant: live.remainingByVariant.byVariant,
      minted,
      buyers,
      outbox,
      returned,
      pending,
      archivedAt: null,
      largestKey,
    };
  }
  const archive = await findSaleArchive(env.DB, sale.id);
  if (archive) return archivedFigures(sale, archive);
  return {
    loaded: false,
    known: false,
    stock: 0,
    remaining: null,
    remainingByVariant: {},
    minted: 0,
    buyers,
    outbox,
    returned,
    pending,
    archivedAt: null,
    largestKey,
  };
}

/**
 * Redis against D1 for one sale. Every minted order id is in exactly one state: pending (in
 * the outbox, not in D1 yet), or one of D1's (awaiting payment, paid, confirmed, expired,
 * cancelled, failed). The units Redis has taken (stock − remaining) are exactly those of the
 * orders that hold units: pending, awaiting payment, paid, confirmed; every expired,
 * cancelled or failed order's units are back. Outbox records already settled but not yet
 * cleared are counted once, as settled. An archived sale is checked the same way, with the
 * figures Redis had when its keys were removed.
 */
export async function reconciliationReport(env: Env, sale: Sale): Promise<ReconciliationReport> {
  const figures = await redisFigures(env, sale);
  const [d1, recovery, rollbacks] = await Promise.all([
    settlementCounts(
      env.DB,
      sale.id,
      figures.pending.map((o) => o.orderId),
      [...new Set(figures.pending.map((o) => o.userId))],
    ),
    findRecovery(env.DB, sale.id),
    failedByRollback(env.DB, sale.id),
  ]);
  return compare(sale, figures, d1, recovery, rollbacks);
}

const isoOrNull = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The recovery as recorded; a sale Redis lost that nobody has reported yet is behind all the same. */
function health(figures: RedisFigures, recovery: RecoveryRecord, failedByRollback: number): SaleHealth {
  const lost = recovery.state === "live" && !figures.known;
  return {
    state: lost ? "behind" : recovery.state,
    detectedAt: isoOrNull(recovery.detectedAt),
    detectedBy: recovery.detectedBy,
    rebuiltAt: isoOrNull(recovery.rebuiltAt),
    rebuilds: recovery.rebuilds,
    failedByRollback,
  };
}

function compare(
  sale: Sale,
  figures: RedisFigures,
  d1: SettlementCounts,
  recovery: RecoveryRecord,
  rollbacks: number,
): ReconciliationReport {
  // Records of orders D1 already has are settled; the consumer clears them a moment later.
  const pendingCount = figures.pending.length - d1.settledOfThese.orders;
  const pendingUnits = figures.pending.reduce((n, o) => n + o.quantity, 0) - d1.settledOfThese.units;
  const { states } = d1;
  const held = pendingUnits + states.awaiting_payment.units + states.paid.units + states.confirmed.units;
  const ended = states.expired.orders + states.cancelled.orders + states.failed.orders;
  const { minted, buyers, returned, largestKey } = figures;
  const bigKey = bigKeyWarning(sale.id, largestKey);
  // A rebuild numbers on above ids that never reached D1 (lost with Redis): not D1's to account for.
  const accountable = minted - recovery.seqOffset;
  const reserved = figures.remaining === null ? 0 : figures.stock - figures.remaining;
  const variants = variantFigures(sale, figures, d1);
  const variantsReconciled =
    !figures.loaded || Object.values(variants).every((v) => v.remaining !== null && v.stock - v.remaining === v.held);
  return {
    saleId: sale.id,
    stock: sale.stock,
    redis: {
      loaded: figures.loaded,
      remaining: figures.remaining,
      reserved,
      minted,
      buyers,
      outbox: figures.outbox,
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
      returnedUnits: states.expired.units + states.cancelled.units + states.failed.units - d1.returnsPendingUnits,
    },
    states: { pending: { orders: pendingCount, units: pendingUnits }, ...states },
    pending: pendingCount,
    returnsPending: d1.returnsPending,
    refundsDue: d1.refundsDue,
    oversold: Math.max(0, reserved - sale.stock, d1.soldCounter - sale.stock),
    reconciled:
      figures.known &&
      accountable === pendingCount + ended + states.awaiting_payment.orders + states.paid.orders + states.confirmed.orders &&
      reserved === held &&
      d1.soldCounter === held - pendingUnits &&
      buyers === d1.buyers &&
      d1.returnsPending === 0 &&
      returned === ended &&
      variantsReconciled,
    archivedAt: isoOrNull(figures.archivedAt),
    largestKey,
    warnings: bigKey ? [bigKey] : [],
    health: health(figures, recovery, rollbacks),
    variants,
  };
}

/**
 * Each variant's figures: Redis' remaining (a sale without variants: the total; as archived
 * once the sale's keys are gone; null when Redis lost it), and D1's held and returned units,
 * with the pending orders D1 does not have yet counted as held.
 */
function variantFigures(sale: Sale, figures: RedisFigures, d1: SettlementCounts): ReconciliationReport["variants"] {
  const pendingUnits = new Map<string, number>();
  for (const o of figures.pending) pendingUnits.set(o.variant, (pendingUnits.get(o.variant) ?? 0) + o.quantity);
  return Object.fromEntries(
    saleVariants(sale).map((v) => {
      const counted = d1.variants[v.id] ?? { held: 0, returned: 0, settledOfThese: 0 };
      const remaining = sale.variants.length > 0 ? (figures.remainingByVariant[v.id] ?? null) : figures.remaining;
      const held = counted.held + (pendingUnits.get(v.id) ?? 0) - counted.settledOfThese;
      return [v.id, { stock: v.stock, remaining, held, returned: counted.returned }];
    }),
  );
}
