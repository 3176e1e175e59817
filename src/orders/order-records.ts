// One order as D1 records it, settled or failed: what the buyer's order route, the payments
// webhook and the order's life after the 202 read.
import type { OrderStatus } from "../shared/api-types";
import { listedOrders, type OrderRow } from "./order-views";

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
  /** The sale's name and the variant's label (null without variants), for people. */
  saleName: string;
  variantLabel: string | null;
}

const fromRow = (r: OrderRow): OrderRecord => ({
  orderId: r.order_id,
  saleId: String(r.sale_id),
  userId: r.user_id,
  // D1 holds no pending order: that state lives in Redis until settlement.
  status: r.status as OrderRecord["status"],
  quantity: r.quantity,
  variant: r.variant,
  amount: r.amount,
  currency: r.currency,
  expiresAt: r.status === "awaiting_payment" ? r.expires_at : null,
  refundDue: r.refund_due === 1,
  failureReason: r.failure_reason,
  saleName: r.sale_name,
  variantLabel: r.variant_label,
});

export async function findOrderRecord(db: D1Database, orderId: string): Promise<OrderRecord | undefined> {
  const row = await db
    .prepare(`${listedOrders("t.order_id = ?1")} LIMIT 1`)
    .bind(orderId)
    .first<OrderRow>();
  return row ? fromRow(row) : undefined;
}
