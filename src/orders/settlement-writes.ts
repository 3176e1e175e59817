// Settlement's writes to D1: accepted orders inserted (idempotently, their first state and
// amount taken from the sale in the same statement), and dead letters recorded as failed.
import type { DeadLetter, OrderMessage } from "../shared/messages";
import { NOW_MS } from "./d1-clock";
import {
  type AwaitingOrder,
  amongIds,
  awaitingFrom,
  ENDED_COLUMNS,
  type EndedOrder,
  type EndedRow,
  fromEnded,
  selectAwaiting,
} from "./order-transitions";

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
      `INSERT INTO orders (order_id, sale_id, user_id, quantity, variant, amount, currency, status, created_at, settled_at, expires_at, closed_at,
                           lane, access_code, traceparent)
       SELECT ?1, s.id, ?3, ?4, ?6, COALESCE(v.price, s.price) * ?4, s.currency,
              CASE WHEN s.state = 'cancelled' THEN 'cancelled' WHEN s.payment_window_sec > 0 THEN 'awaiting_payment' ELSE 'confirmed' END,
              ?5, ${NOW_MS},
              CASE WHEN s.state != 'cancelled' AND s.payment_window_sec > 0 THEN ${NOW_MS} + s.payment_window_sec * 1000 END,
              CASE WHEN s.state = 'cancelled' THEN ${NOW_MS} END,
              ?7, ?8, ?9
       FROM sales s LEFT JOIN sale_variants v ON v.sale_id = s.id AND v.variant_id = ?6 WHERE s.id = ?2
       ON CONFLICT DO NOTHING`,
    )
    .bind(
      o.orderId,
      Number(o.saleId),
      o.userId,
      o.quantity,
      o.reservedAt,
      o.variant,
      o.lane ?? null,
      o.accessCode ?? null,
      o.traceparent ?? null,
    );

export interface SettleResult {
  /** Among the orders, those this batch inserted (the others were in D1 already). */
  inserted: OrderMessage[];
  /** Among the orders, those D1 records as failed: their release must be (re)done. */
  failedIds: Set<string>;
  /** Among the orders, those awaiting payment: each needs its expiry scheduled. */
  awaiting: AwaitingOrder[];
  /** Among the orders, those cancelled (their sale was) whose units are not back yet. */
  cancelled: EndedOrder[];
}

/** Writes all orders in one D1 batch (one transaction, one round trip). */
export async function settleOrders(db: D1Database, orders: OrderMessage[]): Promise<SettleResult> {
  if (orders.length === 0) return { inserted: [], failedIds: new Set(), awaiting: [], cancelled: [] };
  const ids = orders.map((o) => o.orderId);
  const results = await db.batch([
    ...orders.map((o) => insertOrder(db, o)),
    selectFailed(db, ids),
    selectAwaiting(db, ids),
    db
      .prepare(`SELECT ${ENDED_COLUMNS} FROM orders WHERE ${amongIds(1)} AND +status = 'cancelled' AND returned_at IS NULL`)
      .bind(JSON.stringify(ids)),
  ]);
  const [failed, awaiting, cancelled] = results.slice(-3) as [
    D1Result<{ order_id: string }>,
    D1Result<{ order_id: string; expires_at: number }>,
    D1Result<EndedRow>,
  ];
  return {
    inserted: orders.filter((_, i) => (results[i]?.meta.changes ?? 0) > 0),
    failedIds: new Set(failed.results.map((r) => r.order_id)),
    awaiting: awaitingFrom(awaiting.results),
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
