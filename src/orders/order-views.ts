// An order row of D1 (orders, or failed_orders read as status 'failed') as the API shows it.
import type { OrderView } from "../shared/api-types";

/** The columns an order view is made from, as D1 names them. */
export interface OrderRow {
  order_id: string;
  sale_id: number;
  user_id: string;
  status: OrderView["status"];
  quantity: number;
  amount: number;
  currency: string;
  expires_at: number | null;
  refund_due: number;
}

/** The order as GET /api/orders/:orderId shows it. */
export const orderView = (o: OrderRow): OrderView => ({
  orderId: o.order_id,
  saleId: String(o.sale_id),
  userId: o.user_id,
  status: o.status,
  quantity: o.quantity,
  amount: o.amount,
  currency: o.currency,
  expiresAt: o.status === "awaiting_payment" && o.expires_at !== null ? new Date(o.expires_at).toISOString() : null,
  refundDue: o.refund_due === 1,
});
