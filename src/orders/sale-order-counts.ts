// A whole sale's orders read from D1 as one snapshot: the figures the reconciliation report
// compares with Redis, and what a restore rebuilds the sale's live state from.
import type { OrderStatus } from "../shared/api-types";
import { HOLDING } from "./order-transitions";

/** Orders and units per state of one sale, as D1 records them. */
export type StateCounts = Record<Exclude<OrderStatus, "pending">, { orders: number; units: number }>;

export interface SettlementCounts {
  states: StateCounts;
  /** D1's sold counter: units held by orders that hold units. */
  soldCounter: number;
  /** Those of the given (pending) order ids D1 has settled or failed meanwhile, and their units. */
  settledOfThese: { orders: number; units: number };
  /** Distinct buyers holding units: settled holders, and the given pending buyers. */
  buyers: number;
  /** Expired or cancelled orders whose units are not back in Redis yet, and those units. */
  returnsPending: number;
  returnsPendingUnits: number;
  refundsDue: number;
  /**
   * Per variant: units held by settled orders, units of ended ones back on sale (expired and
   * cancelled once returned, failed), and units of the given pending ids D1 has meanwhile.
   */
  variants: Record<string, { held: number; returned: number; settledOfThese: number }>;
}

/** Everything the reconciliation report needs from D1 for one sale, as one snapshot (one batch). */
export async function settlementCounts(
  db: D1Database,
  saleId: string,
  pendingOrderIds: string[],
  pendingBuyers: string[],
): Promise<SettlementCounts> {
  const sale = Number(saleId);
  const [byState, failed, settledOfThese, sold, buyers, returnsPending, refundsDue, byVariant] = await db.batch<{
    status?: string;
    n: number;
    units?: number;
    variant?: string;
    held?: number;
    returned?: number;
    settled?: number;
  }>([
    db
      .prepare("SELECT status, COUNT(*) AS n, COALESCE(SUM(quantity), 0) AS units FROM orders WHERE sale_id = ? GROUP BY status")
      .bind(sale),
    db.prepare("SELECT COUNT(*) AS n, COALESCE(SUM(quantity), 0) AS units FROM failed_orders WHERE sale_id = ?").bind(sale),
    db
      .prepare(
        `SELECT COUNT(*) AS n, COALESCE(SUM(quantity), 0) AS units
         FROM (SELECT order_id, quantity FROM orders UNION ALL SELECT order_id, quantity FROM failed_orders)
         WHERE order_id IN (SELECT value FROM json_each(?))`,
      )
      .bind(JSON.stringify(pendingOrderIds)),
    db.prepare("SELECT sold AS n FROM sales WHERE id = ?").bind(sale),
    db
      .prepare(
        `SELECT COUNT(*) AS n FROM (
           SELECT user_id FROM orders WHERE sale_id = ?1 AND status IN ${HOLDING}
           UNION SELECT value FROM json_each(?2))`,
      )
      .bind(sale, JSON.stringify(pendingBuyers)),
    db
      .prepare(
        `SELECT COUNT(*) AS n, COALESCE(SUM(quantity), 0) AS units FROM orders
         WHERE sale_id = ? AND status IN ('expired', 'cancelled') AND returned_at IS NULL`,
      )
      .bind(sale),
    db.prepare("SELECT COUNT(*) AS n FROM orders WHERE sale_id = ? AND refund_due = 1").bind(sale),
    db
      .prepare(
        `SELECT variant, SUM(held) AS held, SUM(returned) AS returned, SUM(settled) AS settled FROM (
           SELECT variant, CASE WHEN status IN ${HOLDING} THEN quantity ELSE 0 END AS held,
                  CASE WHEN status IN ('expired', 'cancelled') AND returned_at IS NOT NULL THEN quantity ELSE 0 END AS returned,
                  CASE WHEN order_id IN (SELECT value FROM json_each(?2)) THEN quantity ELSE 0 END AS settled
           FROM orders WHERE sale_id = ?1
           UNION ALL
           SELECT variant, 0, quantity, CASE WHEN order_id IN (SELECT value FROM json_each(?2)) THEN quantity ELSE 0 END
           FROM failed_orders WHERE sale_id = ?1)
         GROUP BY variant`,
      )
      .bind(sale, JSON.stringify(pendingOrderIds)),
  ]);
  const states: StateCounts = {
    awaiting_payment: { orders: 0, units: 0 },
    paid: { orders: 0, units: 0 },
    expired: { orders: 0, units: 0 },
    cancelled: { orders: 0, units: 0 },
    confirmed: { orders: 0, units: 0 },
    failed: { orders: failed?.results[0]?.n ?? 0, units: failed?.results[0]?.units ?? 0 },
  };
  for (const row of byState?.results ?? []) {
    const state = states[row.status as keyof StateCounts];
    if (state) Object.assign(state, { orders: row.n, units: row.units ?? 0 });
  }
  const first = (r: typeof byState) => r?.results[0]?.n ?? 0;
  return {
    states,
    soldCounter: first(sold),
    settledOfThese: { orders: first(settledOfThese), units: settledOfThese?.results[0]?.units ?? 0 },
    buyers: first(buyers),
    returnsPending: first(returnsPending),
    returnsPendingUnits: returnsPending?.results[0]?.units ?? 0,
    refundsDue: first(refundsDue),
    variants: Object.fromEntries(
      (byVariant?.results ?? []).map((r) => [
        r.variant as string,
        { held: r.held ?? 0, returned: r.returned ?? 0, settledOfThese: r.settled ?? 0 },
      ]),
    ),
  };
}

/** What a restore rebuilds a sale's live state from: D1's record of its orders, read as one snapshot. */
export interface RestoreSnapshot {
  /** Order ids minted that D1 knows: settled in any state, or failed. */
  minted: number;
  /** Buyers holding units (awaiting payment, paid, confirmed): their units and latest order. */
  holders: { userId: string; units: number; lastOrderId: string }[];
  /** Orders whose units are back on sale, or will be (expired, cancelled, failed), with their buyers (whose bucket holds their records). */
  endedOrders: { orderId: string; userId: string }[];
  /** Units held per variant (the same orders as the holders'). */
  heldByVariant: Record<string, number>;
  /** When an order of the sale last reached D1 (settled or failed), ms; 0 when none did. */
  lastLandedAt: number;
  /** Units held per presale lane, and per lane and variant ("<lane>:<variant>"): what each lane sold and still counts. */
  heldByLane: Record<string, number>;
  /** Orders bought with an access code, oldest first: the code's hash, the buyer, whether it holds its units, when they came back. */
  codeOrders: { accessCode: string; userId: string; holding: boolean; returnedAt: number | null }[];
}

/** One D1 batch, so the figures agree with each other (a batch is one transaction). */
export async function restoreSnapshot(db: D1Database, saleId: string): Promise<RestoreSnapshot> {
  const sale = Number(saleId);
  const [counts, holders, ended, byVariant, byLane, codeOrders] = (await db.batch([
    db
      .prepare(
        `SELECT (SELECT COUNT(*) FROM orders WHERE sale_id = ?1) + (SELECT COUNT(*) FROM failed_orders WHERE sale_id = ?1) AS minted,
                MAX(COALESCE((SELECT MAX(settled_at) FROM orders WHERE sale_id = ?1), 0),
                    COALESCE((SELECT MAX(failed_at) FROM failed_orders WHERE sale_id = ?1), 0)) AS landed`,
      )
      .bind(sale),
    db
      .prepare(
        // printf keeps the 63-bit id exact (a JavaScript number would not).
        `SELECT user_id, SUM(quantity) AS units, printf('%d', MAX(CAST(order_id AS INTEGER))) AS last_order_id
         FROM orders WHERE sale_id = ? AND status IN ${HOLDING} GROUP BY user_id`,
      )
      .bind(sale),
    db
      .prepare(
        `SELECT order_id, user_id FROM orders WHERE sale_id = ?1 AND status IN ('expired', 'cancelled')
         UNION ALL SELECT order_id, user_id FROM failed_orders WHERE sale_id = ?1`,
      )
      .bind(sale),
    db
      .prepare(`SELECT variant, SUM(quantity) AS units FROM orders WHERE sale_id = ? AND status IN ${HOLDING} GROUP BY variant`)
      .bind(sale),
    db
      .prepare(
        `SELECT lane, variant, SUM(quantity) AS units FROM orders
         WHERE sale_id = ? AND lane IS NOT NULL AND status IN ${HOLDING} GROUP BY lane, variant`,
      )
      .bind(sale),
    db
      .prepare(
        `SELECT access_code, user_id, status IN ${HOLDING} AS holding, returned_at FROM orders
         WHERE sale_id = ? AND access_code IS NOT NULL ORDER BY CAST(order_id AS INTEGER)`,
      )
      .bind(sale),
  ])) as [
    D1Result<{ minted: number; landed: number }>,
    D1Result<{ user_id: string; units: number; last_order_id: string }>,
    D1Result<{ order_id: string; user_id: string }>,
    D1Result<{ variant: string; units: number }>,
    D1Result<{ lane: string; variant: string; units: number }>,
    D1Result<{ access_code: string; user_id: string; holding: number; returned_at: number | null }>,
  ];
  const heldByLane: Record<string, number> = {};
  for (const r of byLane.results) {
    heldByLane[r.lane] = (heldByLane[r.lane] ?? 0) + r.units;
    heldByLane[`${r.lane}:${r.variant}`] = r.units;
  }
  return {
    minted: counts.results[0]?.minted ?? 0,
    lastLandedAt: counts.results[0]?.landed ?? 0,
    holders: holders.results.map((r) => ({ userId: r.user_id, units: r.units, lastOrderId: r.last_order_id })),
    endedOrders: ended.results.map((r) => ({ orderId: r.order_id, userId: r.user_id })),
    heldByVariant: Object.fromEntries(byVariant.results.map((r) => [r.variant, r.units])),
    heldByLane,
    codeOrders: codeOrders.results.map((r) => ({
      accessCode: r.access_code,
      userId: r.user_id,
      holding: r.holding === 1,
      returnedAt: r.returned_at,
    })),
  };
}
