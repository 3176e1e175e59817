// An order row of D1 (orders, or failed_orders read as status 'failed') as the API shows it.
import { REDIS_ROLLBACK } from "../sales/recovery-record";
import type { OrderView } from "../shared/api-types";
import { DEFAULT_VARIANT } from "../shared/limits";
import { type OrderIdCipher, orderReference } from "../shared/public-order-id";

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
  /** The sale's name and the variant's label (null for a sale without variants), joined in. */
  sale_name: string;
  variant_label: string | null;
}

const NAME_COLUMNS = "s.name AS sale_name, v.label AS variant_label";

/**
 * Orders and failed orders (read as status 'failed', priced as the sale prices them), with
 * the sale's name and the variant's label: `filter` picks rows of either table, named `t`.
 */
export const listedOrders = (filter: string) =>
  `SELECT t.order_id, t.sale_id, t.user_id, t.status, t.quantity, t.variant, t.amount, t.currency, t.expires_at, t.refund_due,
          NULL AS failure_reason, t.created_at, t.closed_at, ${NAME_COLUMNS}
   FROM orders t JOIN sales s ON s.id = t.sale_id LEFT JOIN sale_variants v ON v.sale_id = t.sale_id AND v.variant_id = t.variant
   WHERE ${filter}
   UNION ALL
   SELECT t.order_id, t.sale_id, t.user_id, 'failed', t.quantity, t.variant, COALESCE(v.price, s.price) * t.quantity, s.currency,
          NULL, 0, t.reason, t.created_at, t.failed_at, ${NAME_COLUMNS}
   FROM failed_orders t JOIN sales s ON s.id = t.sale_id LEFT JOIN sale_variants v ON v.sale_id = t.sale_id AND v.variant_id = t.variant
   WHERE ${filter}`;

/** What people read beside an order's id: its public id, the short reference, the sale's name and the variant's label. */
export async function orderNames(
  internalId: string,
  names: { saleName: string; variantLabel: string | null; variant: string },
  ids: OrderIdCipher,
): Promise<Pick<OrderView, "orderId" | "reference" | "saleName" | "variantLabel">> {
  const orderId = await ids.toPublic(internalId);
  const variantLabel = names.variant === DEFAULT_VARIANT ? null : (names.variantLabel ?? names.variant);
  return { orderId, reference: orderReference(orderId), saleName: names.saleName, variantLabel };
}

/**
 * Views of `rows` made one after another, not all at once: each public id is ten rounds of
 * Web Crypto calls, and many ciphered together took about 1.4 times the CPU in workerd.
 */
export async function viewsInTurn<Row, View>(rows: readonly Row[], view: (row: Row) => Promise<View>): Promise<View[]> {
  const views: View[] = [];
  for (const row of rows) views.push(await view(row));
  return views;
}

/** Only the kind of failure: a dead letter's recorded reason is an internal error message. */
export const failureKind = (status: OrderView["status"], reason: string | null): OrderView["failureReason"] =>
  status !== "failed" ? null : reason === REDIS_ROLLBACK ? "REDIS_ROLLBACK" : "SETTLEMENT_FAILED";

/** The order as GET /api/orders/:orderId shows it. */
export const orderView = async (o: OrderRow, ids: OrderIdCipher): Promise<OrderView> => ({
  ...(await orderNames(o.order_id, { saleName: o.sale_name, variantLabel: o.variant_label, variant: o.variant }, ids)),
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
