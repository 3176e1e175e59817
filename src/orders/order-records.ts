// One order as D1 records it, settled or failed: what the buyer's order route, the payments
// webhook and the order's life after the 202 read.
import type { OrderStatus } from "../shared/api-types";

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
