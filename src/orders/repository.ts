// D1's orders and failed_orders tables: settling, failing and reading orders.
import type { DeadLetter, OrderMessage } from "../shared/messages";

/** Which of these orders are recorded as failed (the ids travel as one JSON array). */
const selectFailed = (db: D1Database, orderIds: string[]) =>
  db
    .prepare("SELECT order_id FROM failed_orders WHERE order_id IN (SELECT value FROM json_each(?))")
    .bind(JSON.stringify(orderIds));

/**
 * Idempotent insert: a redelivered or re-driven order is a no-op (UNIQUE(order_id) and
 * UNIQUE(sale_id, user_id)). ON CONFLICT DO NOTHING covers only uniqueness, so the
 * sold <= stock CHECK still aborts the statement, and with it the whole batch.
 */
const insertOrder = (db: D1Database, o: OrderMessage, now: number) =>
  db
    .prepare(
      `INSERT INTO orders (order_id, sale_id, user_id, created_at, settled_at)
       VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING`,
    )
    .bind(o.orderId, Number(o.saleId), o.userId, o.reservedAt, now);

/**
 * Writes all orders in one D1 batch (one transaction, one round trip). Returns the ids among
 * them that are recorded as failed (trigger orders_skip_failed ignored their insert): a
 * dead letter failed them, and their release must be (re)done.
 */
export async function settleOrders(db: D1Database, orders: OrderMessage[], now = Date.now()): Promise<Set<string>> {
  if (orders.length === 0) return new Set();
  const failed = selectFailed(
    db,
    orders.map((o) => o.orderId),
  );
  const results = await db.batch<{ order_id: string }>([...orders.map((o) => insertOrder(db, o, now)), failed]);
  return new Set(results.at(-1)?.results.map((r) => r.order_id));
}

/**
 * Records dead letters as failed, unless the order did settle after all (its last ack was
 * lost). Returns the ids now recorded as failed: exactly the reservations to release.
 * D1 runs one statement at a time, and a failed order can never be inserted later
 * (trigger orders_skip_failed), so an order ends up confirmed or failed, never both.
 */
export async function recordFailures(db: D1Database, letters: DeadLetter[], now = Date.now()): Promise<Set<string>> {
  if (letters.length === 0) return new Set();
  const inserts = letters.map((l) =>
    db
      .prepare(
        `INSERT INTO failed_orders (order_id, sale_id, user_id, reason, created_at, failed_at)
         SELECT ?1, ?2, ?3, ?4, ?5, ?6 WHERE NOT EXISTS (SELECT 1 FROM orders WHERE order_id = ?1)
         ON CONFLICT DO NOTHING`,
      )
      .bind(l.orderId, Number(l.saleId), l.userId, l.reason ?? "delivery attempts exhausted", l.reservedAt, now),
  );
  const failed = selectFailed(
    db,
    letters.map((l) => l.orderId),
  );
  const results = await db.batch<{ order_id: string }>([...inserts, failed]);
  return new Set(results.at(-1)?.results.map((r) => r.order_id));
}

export type OrderRecord = { status: "confirmed" | "failed"; orderId: string; saleId: string; userId: string } | undefined;

export async function findOrderRecord(db: D1Database, orderId: string): Promise<OrderRecord> {
  const row = await db
    .prepare(
      `SELECT 'confirmed' AS status, sale_id, user_id FROM orders WHERE order_id = ?1
       UNION ALL SELECT 'failed', sale_id, user_id FROM failed_orders WHERE order_id = ?1 LIMIT 1`,
    )
    .bind(orderId)
    .first<{ status: "confirmed" | "failed"; sale_id: number; user_id: string }>();
  return row ? { status: row.status, orderId, saleId: String(row.sale_id), userId: row.user_id } : undefined;
}

/** Confirmed and failed counts, the sold counter, and how many of `orderIds` are settled: one snapshot. */
export async function settlementCounts(db: D1Database, saleId: string, orderIds: string[]) {
  const [confirmed, failed, settledOfThese, sold] = await db.batch<{ n: number }>([
    db.prepare("SELECT COUNT(*) AS n FROM orders WHERE sale_id = ?").bind(Number(saleId)),
    db.prepare("SELECT COUNT(*) AS n FROM failed_orders WHERE sale_id = ?").bind(Number(saleId)),
    db
      .prepare(
        `SELECT COUNT(*) AS n FROM (SELECT order_id FROM orders UNION ALL SELECT order_id FROM failed_orders)
         WHERE order_id IN (SELECT value FROM json_each(?))`,
      )
      .bind(JSON.stringify(orderIds)),
    db.prepare("SELECT sold AS n FROM sales WHERE id = ?").bind(Number(saleId)),
  ]);
  return {
    confirmed: confirmed?.results[0]?.n ?? 0,
    failed: failed?.results[0]?.n ?? 0,
    settledStillInOutbox: settledOfThese?.results[0]?.n ?? 0,
    soldCounter: sold?.results[0]?.n ?? 0,
  };
}
