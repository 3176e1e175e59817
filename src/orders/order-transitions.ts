// The conditional statements that move an order from one state to the next in D1 (expire,
// cancel, pay, refund, return its units), each decided by D1 in one statement, by D1's clock.
import { countOrdersInFunnel } from "../analytics/funnel";
import { NOW_MS } from "./d1-clock";
import type { OrderRecord } from "./order-records";
import { claimHeldByAnother, type HeldClaim, type OrderClaimRow, selectOrderClaim } from "./payment-claim";

/** States in which an order holds its units. */
export const HOLDING = "('awaiting_payment', 'paid', 'confirmed')";

/** An order awaiting payment, and when its window closes. */
export interface AwaitingOrder {
  orderId: string;
  expiresAt: number;
}

/** An order whose units go back on sale. */
export interface EndedOrder {
  orderId: string;
  saleId: string;
  userId: string;
  quantity: number;
  variant: string;
  /** The presale lane it was bought in and the access code's hash it spent (docs/lanes.md). */
  lane?: string;
  accessCode?: string;
}

export const ENDED_COLUMNS = "order_id, sale_id, user_id, quantity, variant, lane, access_code";
export type EndedRow = {
  order_id: string;
  sale_id: number;
  user_id: string;
  quantity: number;
  variant: string;
  lane: string | null;
  access_code: string | null;
};
export const fromEnded = (r: EndedRow): EndedOrder => ({
  orderId: r.order_id,
  saleId: String(r.sale_id),
  userId: r.user_id,
  quantity: r.quantity,
  variant: r.variant,
  ...(r.lane !== null && r.access_code !== null && { lane: r.lane, accessCode: r.access_code }),
});

/**
 * Orders among a JSON list of ids (`?n`), looked up by key. Statements that name their orders
 * write their status test as `+status` (SQLite's unary plus keeps a column's indexes out of a
 * plan): with orders_due or orders_unreturned on offer, SQLite's planner would otherwise read
 * every order of that status, in every sale, to find the few named.
 */
export const amongIds = (n: number) => `order_id IN (SELECT value FROM json_each(?${n}))`;

/**
 * Expires orders whose window has closed by D1's clock: `orderIds` (an expiry job), or any
 * that are due (the sweep, which finds them through orders_due), at most `limit`. Returns
 * the orders this statement expired. Reads the orders it expires, however many the sales hold.
 */
export async function expireDue(db: D1Database, orderIds: string[] | undefined, limit: number): Promise<EndedOrder[]> {
  const statement = (which: string) =>
    db.prepare(
      `UPDATE orders SET status = 'expired', closed_at = ${NOW_MS}
       WHERE ${which} AND +status = 'awaiting_payment' AND expires_at <= ${NOW_MS}
       RETURNING ${ENDED_COLUMNS}`,
    );
  const update = orderIds
    ? statement(amongIds(1)).bind(JSON.stringify(orderIds))
    : statement(
        `order_id IN (SELECT order_id FROM orders WHERE status = 'awaiting_payment' AND expires_at <= ${NOW_MS} LIMIT ?1)`,
      ).bind(limit);
  const { results } = await update.all<EndedRow>();
  return counted("expired", results.map(fromEnded));
}

/** `orders` counted in the funnel at `step`: each statement counts the orders it changed. */
function counted<T extends EndedOrder>(step: "expired" | "cancelled", orders: T[]): T[] {
  countOrdersInFunnel(step, orders);
  return orders;
}

/** Those of `orderIds` still awaiting payment, with their deadlines (a statement, for a batch; rows as `awaitingFrom` reads them). */
export const selectAwaiting = (db: D1Database, orderIds: string[]): D1PreparedStatement =>
  db
    .prepare(`SELECT order_id, expires_at FROM orders WHERE ${amongIds(1)} AND +status = 'awaiting_payment'`)
    .bind(JSON.stringify(orderIds));
export const awaitingFrom = (rows: { order_id: string; expires_at: number }[]): AwaitingOrder[] =>
  rows.map((r) => ({ orderId: r.order_id, expiresAt: r.expires_at }));

/** Those of `orderIds` still awaiting payment, with their deadlines. */
export async function stillAwaiting(db: D1Database, orderIds: string[]): Promise<AwaitingOrder[]> {
  const { results } = await selectAwaiting(db, orderIds).all<{ order_id: string; expires_at: number }>();
  return awaitingFrom(results);
}

/**
 * Cancels orders of cancelled sales that still hold units, at most `limit`: those of one
 * sale, or of any (the sweep's backstop). A paid one is marked for a refund. Returns the
 * orders this statement cancelled; their units go back through the sweep's usual return.
 * Reads the cancelled sales (sales_cancelled) and their orders, never the orders of sales
 * that go on (CROSS JOIN keeps SQLite to that order).
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
         SELECT o.order_id FROM sales s CROSS JOIN orders o ON o.sale_id = s.id
         WHERE s.state = 'cancelled' AND (?1 IS NULL OR s.id = ?1) AND +o.status IN ${HOLDING}
         LIMIT ?2)
       RETURNING ${ENDED_COLUMNS}`,
    )
    .bind(saleId === undefined ? null : Number(saleId), limit)
    .all<EndedRow>();
  return counted("cancelled", results.map(fromEnded));
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
  return row ? counted("cancelled", [fromEnded(row)])[0] : undefined;
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
  const [update, after] = (await db.batch<unknown>([
    db
      .prepare(
        `UPDATE orders SET status = 'paid', closed_at = ${NOW_MS}, paid_ref = ?2
         WHERE order_id = ?1 AND status = 'awaiting_payment' AND expires_at > ${NOW_MS} AND payment_claim IS ?3
         RETURNING sale_id, quantity`,
      )
      .bind(orderId, ref, claim),
    selectOrderClaim(db, orderId),
  ])) as [D1Result<{ sale_id: number; quantity: number }>, D1Result<OrderClaimRow>];
  const row = after.results[0];
  const paidNow = update.results[0];
  if (paidNow) countOrdersInFunnel("paid", [{ saleId: String(paidNow.sale_id), quantity: paidNow.quantity }]);
  if (paidNow || (row?.status === "paid" && row.paid_ref === ref)) return { paid: true };
  return { paid: false, heldBy: claimHeldByAnother(row, claim), status: row?.status };
}

/** A charge landed that the order cannot keep: recorded, visibly, for a refund. */
export async function markRefundDue(db: D1Database, orderId: string): Promise<void> {
  await db.prepare("UPDATE orders SET refund_due = 1 WHERE order_id = ?").bind(orderId).run();
}

/** Ended orders (expired, cancelled) whose units are not back in Redis yet: any, oldest first, or among `orderIds`. */
export async function unreturnedOrders(db: D1Database, limit: number, orderIds?: string[]): Promise<EndedOrder[]> {
  // The sweep finds them through orders_unreturned; a job looks its own up by key.
  const which = orderIds ? `${amongIds(2)} AND +status` : "status";
  const statement = db.prepare(
    `SELECT ${ENDED_COLUMNS} FROM orders WHERE ${which} IN ('expired', 'cancelled') AND returned_at IS NULL
     ORDER BY closed_at LIMIT ?1`,
  );
  const { results } = await (orderIds ? statement.bind(limit, JSON.stringify(orderIds)) : statement.bind(limit)).all<EndedRow>();
  return results.map(fromEnded);
}

export async function markReturned(db: D1Database, orderIds: string[]): Promise<void> {
  if (orderIds.length === 0) return;
  await db
    .prepare(`UPDATE orders SET returned_at = ${NOW_MS} WHERE ${amongIds(1)} AND returned_at IS NULL`)
    .bind(JSON.stringify(orderIds))
    .run();
}
