// An order row of D1 (orders, or failed_orders read as status 'failed') as the API shows it.
import { REDIS_ROLLBACK } from "../sales/recovery-record";
import type { OrderView } from "../shared/api-types";

/** The columns an order view is made from, as D1 names them. */
export interface OrderRow {
  order_id: string;
  sale_id: number;
  user_id: string;
  status: OrderView["status"];
  quantity: number;
  variant: string;
  amount: number;
  currency: string;
  expires_at: number | null;
  refund_due: number;
  /** A failed order's recorded reason (failed_orders.reason); null for the others. */
  failure_reason: string | null;
}

/** Only the kind of failure: a dead letter's recorded reason is an internal error message. */
export const failureKind = (status: OrderView["status"], reason: string | null): OrderView["failureReason"] =>
  status !== "failed" ? null : reason === REDIS_ROLLBACK ? "REDIS_ROLLBACK" : "SETTLEMENT_FAILED";

/** The order as GET /api/orders/:orderId shows it. */
export const orderView = (o: OrderRow): OrderView => ({
  orderId: o.order_id,
  saleId: String(o.sale_id),
  userId: o.user_id,
  status: o.status,
  quantity: o.quantity,
  variant: o.variant,
  amount: o.amount,
  currency: o.currency,
  expiresAt: o.status === "awaiting_payment" && o.expires_at !== null ? new Date(o.expires_at).toISOString() : null,
  refundDue: o.refund_due === 1,
  failureReason: failureKind(o.status, o.failure_reason),
});
