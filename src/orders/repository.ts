// D1's orders and failed_orders tables: settling, failing, reading orders, and the
// conditional statements that move an order from one state to the next.
import type { OrderStatus } from "../shared/api-types";
import type { DeadLetter, OrderMessage } from "../shared/messages";
import { NOW_MS } from "./d1-clock";
import { claimHeldByAnother, type HeldClaim, type OrderClaimRow, selectOrderClaim } from "./payment-claim";

/** States in which an order holds its units. */
export const HOLDING = "('awaiting_payment', 'paid', 'confirmed')";

/** Which of these orders are recorded as failed (the ids travel as one JSON array). */
const selectFailed = (db: D1Database, orderIds: string[]) =>
  db
    .prepare("SELECT order_id FROM failed_orders WHERE order_id IN (SELECT value FROM json_each(?))")
    .bind(JSON.stringify(orderIds));

/**
 * Idempotent insert: a redelivered or re-driven order is a no-op (UNIQUE(order_id)). Its
 * amount, currency and first state come from the sale in the same statement: awaiting
 * payment until settled_at + the sale's window, or confirmed when the sale has none; or
 * cancelled at once when the sale was cancelled while the order was on its way (its units
 * then come back like any cancelled order's). ON CONFLICT DO NOTHING covers only
 * uniqueness, so the sold <= stock CHECK and the per-buyer limit trigger still abort the
 * statement, and with it the whole batch.
 */
const insertOrder = (db: D1Database, o: OrderMessage) =>
  db
    .prepare(
      `INSERT INTO orders (order_id, sale_id, user_id, quantity, variant, amount, currency, status, created_at, settled_at, expires_at, closed_at)
       SELECT ?1, s.id, ?3, ?4, ?6, COALESCE(v.price, s.price) * ?4, s.currency,
              CASE WHEN s.state = 'cancelled' THEN 'cancelled' WHEN s.payment_window_sec > 0 THEN 'awaiting_payment' ELSE 'confirmed' END,
              ?5, ${NOW_MS},
              CASE WHEN s.state != 'cancelled' AND s.payment_window_sec > 0 THEN ${NOW_MS} + s.payment_window_sec * 1000 END,
              CASE WHEN s.state = 'cancelled' THEN ${NOW_MS} END
       FROM sales s LEFT JOIN sale_variants v ON v.sale_id = s.id AND v.variant_id = ?6 WHERE s.id = ?2
       ON CONFLICT DO NOTHING`,
    )
    .bind(o.orderId, Number(o.saleId), o.userId, o.quantity, o.reservedAt, o.variant);

/** An order awaiting payment, and when its window closes. */
export interface AwaitingOrder {
  orderId: string;
  expiresAt: number;
}

export interface SettleResult {
  /** Among the orders, those D1 records as failed: their release must be (re)done. */
  failedIds: Set<string>;
  /** Among the orders, those awaiting payment: each needs its expiry scheduled. */
  awaiting: AwaitingOrder[];
  /** Among the orders, those cancelled (their sale was) whose units are not back yet. */
  cancelled: EndedOrder[];
}

/** Writes all orders in one D1 batch (one transaction, one round trip). */
export async function settleOrders(db: D1Database, orders: OrderMessage[]): Promise<SettleResult> {
  if (orders.length === 0) return { failedIds: new Set(), awaiting: [], cancelled: [] };
  const ids = JSON.stringify(orders.map((o) => o.orderId));
  const results = await db.batch([
    ...orders.map((o) => insertOrder(db, o)),
    selectFailed(
      db,
      orders.map((o) => o.orderId),
    ),
    db
      .prepare(
        "SELECT order_id, expires_at FROM orders WHERE order_id IN (SELECT value FROM json_each(?)) AND status = 'awaiting_payment'",
      )
      .bind(ids),
    db
      .prepare(
        `SELECT ${ENDED_COLUMNS} FROM orders
         WHERE order_id IN (SELECT value FROM json_each(?)) AND status = 'cancelled' AND returned_at IS NULL`,
      )
      .bind(ids),
  ]);
  const [failed, awaiting, cancelled] = results.slice(-3) as [
    D1Result<{ order_id: string }>,
    D1Result<{ order_id: string; expires_at: number }>,
    D1Result<EndedRow>,
  ];
  return {
    failedIds: new Set(failed.results.map((r) => r.order_id)),
    awaiting: awaiting.results.map((r) => ({ orderId: r.order_id, expiresAt: r.expires_at })),
    cancelled: cancelled.results.map(fromEnded),
  };
}

/**
 * Records dead letters as failed, unless the order did settle after all (its last ack was
 * lost). Returns the ids now recorded as failed: exactly the reservations to release.
 * D1 runs one statement at a time, and a failed order can never be inserted later
 * (trigger orders_skip_failed), so an order ends up settled or failed, never both.
 */
export async function recordFailures(db: D1Database, letters: DeadLetter[], now = Date.now()): Promise<Set<string>> {
  if (letters.length === 0) return new Set();
  const inserts = letters.map((l) =>
    db
      .prepare(
        `INSERT INTO failed_orders (order_id, sale_id, user_id, quantity, reason, created_at, failed_at, variant)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8 WHERE NOT EXISTS (SELECT 1 FROM orders WHERE order_id = ?1)
         ON CONFLICT DO NOTHING`,
      )
      .bind(
        l.orderId,
        Number(l.saleId),
        l.userId,
        l.quantity,
        l.reason ?? "delivery attempts exhausted",
        l.reservedAt,
        now,
        l.variant,
      ),
  );
  const failed = selectFailed(
    db,
    letters.map((l) => l.orderId),
  );
  const results = await db.batch<{ order_id: string }>([...inserts, failed]);
  return new Set(results.at(-1)?.results.map((r) => r.order_id));
}

/** An order as D1 records it (settled or failed). */
export interface OrderRecord {
  orderId: string;
  saleId: string;
  userId: string;
  status: Exclude<OrderStatus, "pending">;
  quantity: number;
  variant: string;
  amount: number;
  currency: string;
  expiresAt: number | null;
  refundDue: boolean;
  /** A failed order's recorded reason; null otherwise. */
  failureReason: string | null;
}

interface OrderRow {
  order_id: string;
  sale_id: number;
  user_id: string;
  status: OrderRecord["status"];
  quantity: number;
  variant: string;
  amount: number;
  currency: string;
  expires_at: number | null;
  refund_due: number;
  reason: string | null;
}

const ORDER_COLUMNS =
  "order_id, sale_id, user_id, status, quantity, variant, amount, currency, expires_at, refund_due, NULL AS reason";

const fromRow = (r: OrderRow): OrderRecord => ({
  orderId: r.order_id,
  saleId: String(r.sale_id),
  userId: r.user_id,
  status: r.status,
  quantity: r.quantity,
  variant: r.variant,
  amount: r.amount,
  currency: r.currency,
  expiresAt: r.status === "awaiting_payment" ? r.expires_at : null,
  refundDue: r.refund_due === 1,
  failureReason: r.reason,
});

export async function findOrderRecord(db: D1Database, orderId: string): Promise<OrderRecord | undefined> {
  const row = await db
    .prepare(
      `SELECT ${ORDER_COLUMNS} FROM orders WHERE order_id = ?1
       UNION ALL
       SELECT f.order_id, f.sale_id, f.user_id, 'failed', f.quantity, f.variant, COALESCE(v.price, s.price) * f.quantity, s.currency, NULL, 0, f.reason
       FROM failed_orders f JOIN sales s ON s.id = f.sale_id
         LEFT JOIN sale_variants v ON v.sale_id = f.sale_id AND v.variant_id = f.variant WHERE f.order_id = ?1
       LIMIT 1`,
    )
    .bind(orderId)
    .first<OrderRow>();
  return row ? fromRow(row) : undefined;
}

/** An order whose units go back on sale. */
export interface EndedOrder {
  orderId: string;
  saleId: string;
  userId: string;
  quantity: number;
  variant: string;
}

const ENDED_COLUMNS = "order_id, sale_id, user_id, quantity, variant";
type EndedRow = { order_id: string; sale_id: number; user_id: string; quantity: number; variant: string };
const fromEnded = (r: EndedRow): EndedOrder => ({
  orderId: r.order_id,
  saleId: String(r.sale_id),
  userId: r.user_id,
  quantity: r.quantity,
  variant: r.variant,
});

/**
 * Expires orders whose window has closed by D1's clock: `orderIds` (an expiry job), or any
 * that are due (the sweep), at most `limit`. Returns the orders this statement expired.
 */
export async function expireDue(db: D1Database, orderIds: string[] | undefined, limit: number): Promise<EndedOrder[]> {
  const statement = (which: string) =>
    db.prepare(
      `UPDATE orders SET status = 'expired', closed_at = ${NOW_MS}
       WHERE ${which} AND status = 'awaiting_payment' AND expires_at <= ${NOW_MS}
       RETURNING ${ENDED_COLUMNS}`,
    );
  const update = orderIds
    ? statement("order_id IN (SELECT value FROM json_each(?1))").bind(JSON.stringify(orderIds))
    : statement(
        `order_id IN (SELECT order_id FROM orders WHERE status = 'awaiting_payment' AND expires_at <= ${NOW_MS} LIMIT ?1)`,
      ).bind(limit);
  const { results } = await update.all<EndedRow>();
  return results.map(fromEnded);
}

/** Those of `orderIds` still awaiting payment, with their deadlines. */
export async function stillAwaiting(db: D1Database, orderIds: string[]): Promise<AwaitingOrder[]> {
  const { results } = await db
    .prepare(
      "SELECT order_id, expires_at FROM orders WHERE order_id IN (SELECT value FROM json_each(?)) AND status = 'awaiting_payment'",
    )
    .bind(JSON.stringify(orderIds))
    .all<{ order_id: string; expires_at: number }>();
  return results.map((r) => ({ orderId: r.order_id, expiresAt: r.expires_at }));
}

/**
 * Cancels orders of cancelled sales that still hold units, at most `limit`: those of one
 * sale, or of any (the sweep's backstop). A paid one is marked for a refund. Returns the
 * orders this statement cancelled; their units go back through the sweep's usual return.
 */
export async function cancelOrdersOfCancelledSales(
  db: D1Database,
  saleId: string | undefined,
  limit: number,
): Promise<EndedOrder[]> {
  const { results } = await db
    .prepare(
      `UPDATE orders SET status = 'cancelled', closed_at = ${NOW_MS}, refund_due = refund_due OR status = 'paid'
       WHERE order_id IN (
         SELECT o.order_id FROM orders o JOIN sales s ON s.id = o.sale_id
         WHERE s.state = 'cancelled' AND o.status IN ${HOLDING} AND (?1 IS NULL OR o.sale_id = ?1)
         LIMIT ?2)
       RETURNING ${ENDED_COLUMNS}`,
    )
    .bind(saleId === undefined ? null : Number(saleId), limit)
    .all<EndedRow>();
  return results.map(fromEnded);
}

/** Cancels the owner's order while it awaits payment and its window is open; undefined when it was not. */
export async function cancelAwaiting(db: D1Database, orderId: string, userId: string): Promise<EndedOrder | undefined> {
  const row = await db
    .prepare(
      `UPDATE orders SET status = 'cancelled', closed_at = ${NOW_MS}
       WHERE order_id = ?1 AND user_id = ?2 AND status = 'awaiting_payment' AND expires_at > ${NOW_MS}
       RETURNING ${ENDED_COLUMNS}`,
    )
    .bind(orderId, userId)
    .first<EndedRow>();
  return row ? fromEnded(row) : undefined;
}

/**
 * How a charge landed on its order: it paid it (now, or this same `ref` did before: a retry);
 * another attempt's claim kept it out while the order is still payable (it may try again
 * once that attempt ends); or the order was paid by something else, or ended, first.
 */
export type Landing = { paid: true } | { paid: false; heldBy: HeldClaim | undefined; status: OrderRecord["status"] | undefined };

/**
 * The payment's side of the race: paid by `ref` if, and only if, the order still awaits
 * payment, its window is open by D1's clock and `claim` holds its payment claim (null: nobody
 * does), decided in one statement; the order is read back in the same batch.
 */
export async function markPaid(db: D1Database, orderId: string, ref: string, claim: string | null): Promise<Landing> {
  const [update, after] = await db.batch<OrderClaimRow>([
    db
      .prepare(
        `UPDATE orders SET status = 'paid', closed_at = ${NOW_MS}, paid_ref = ?2
         WHERE order_id = ?1 AND status = 'awaiting_payment' AND expires_at > ${NOW_MS} AND payment_claim IS ?3`,
      )
      .bind(orderId, ref, claim),
    selectOrderClaim(db, orderId),
  ]);
  const row = after?.results[0];
  if (update?.meta.changes === 1 || (row?.status === "paid" && row.paid_ref === ref)) return { paid: true };
  return { paid: false, heldBy: claimHeldByAnother(row, claim), status: row?.status };
}

/** A charge landed that the order cannot keep: recorded, visibly, for a refund. */
export async function markRefundDue(db: D1Database, orderId: string): Promise<void> {
  await db.prepare("UPDATE orders SET refund_due = 1 WHERE order_id = ?").bind(orderId).run();
}

/** Ended orders (expired, cancelled) whose units are not back in Redis yet: any, oldest first, or among `orderIds`. */
export async function unreturnedOrders(db: D1Database, limit: number, orderIds?: string[]): Promise<EndedOrder[]> {
  const among = orderIds ? "AND order_id IN (SELECT value FROM json_each(?2))" : "";
  const statement = db.prepare(
    `SELECT ${ENDED_COLUMNS} FROM orders WHERE status IN ('expired', 'cancelled') AND returned_at IS NULL ${among}
     ORDER BY closed_at LIMIT ?1`,
  );
  const { results } = await (orderIds ? statement.bind(limit, JSON.stringify(orderIds)) : statement.bind(limit)).all<EndedRow>();
  return results.map(fromEnded);
}

export async function markReturned(db: D1Database, orderIds: string[]): Promise<void> {
  if (orderIds.length === 0) return;
  await db
    .prepare(
      `UPDATE orders SET returned_at = ${NOW_MS} WHERE order_id IN (SELECT value FROM json_each(?)) AND returned_at IS NULL`,
    )
    .bind(JSON.stringify(orderIds))
    .run();
}

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
}

/** One D1 batch, so the figures agree with each other (a batch is one transaction). */
export async function restoreSnapshot(db: D1Database, saleId: string): Promise<RestoreSnapshot> {
  const sale = Number(saleId);
  const [counts, holders, ended, byVariant] = (await db.batch([
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
  ])) as [
    D1Result<{ minted: number; landed: number }>,
    D1Result<{ user_id: string; units: number; last_order_id: string }>,
    D1Result<{ order_id: string; user_id: string }>,
    D1Result<{ variant: string; units: number }>,
  ];
  return {
    minted: counts.results[0]?.minted ?? 0,
    lastLandedAt: counts.results[0]?.landed ?? 0,
    holders: holders.results.map((r) => ({ userId: r.user_id, units: r.units, lastOrderId: r.last_order_id })),
    endedOrders: ended.results.map((r) => ({ orderId: r.order_id, userId: r.user_id })),
    heldByVariant: Object.fromEntries(byVariant.results.map((r) => [r.variant, r.units])),
  };
}
