// Lists of orders, newest first with a keyset cursor: a sale's (the admin's list and its CSV
// export) and a buyer's across sales; and one order with its history, payments and events.
// Failed orders (failed_orders) are listed with status 'failed'.

import type { AdminOrderDetail, AdminOrderPage, AdminOrderView, BuyerOrderPage } from "../shared/api-types";
import { csvRow } from "./csv";
import { deliveriesOf } from "./event-deliveries";
import { type OrderRow, orderView } from "./order-views";

/** Rows a CSV export reads at a time: its memory is one page, whatever the sale's size. */
export const EXPORT_PAGE_SIZE = 1000;

type ListedRow = OrderRow & { created_at: number; closed_at: number | null };

interface Position {
  createdAt: number;
  orderId: string;
}

/** `<createdAt>.<orderId>` of the last order of a page. */
const encodeCursor = (p: Position) => `${p.createdAt}.${p.orderId}`;
const decodeCursor = (cursor: string | undefined): Position => {
  if (cursor === undefined) return { createdAt: Number.MAX_SAFE_INTEGER, orderId: "" };
  const [createdAt, orderId] = cursor.split(".");
  return { createdAt: Number(createdAt), orderId: orderId as string };
};

type Owner = { saleId: string } | { userId: string };

/** One page of orders (and failed orders) of a sale or a buyer, newest first, after `after`. */
async function page(db: D1Database, owner: Owner, status: string | undefined, after: Position, limit: number) {
  const [column, value] = "saleId" in owner ? ["sale_id", Number(owner.saleId)] : ["user_id", owner.userId];
  const { results } = await db
    .prepare(
      `SELECT * FROM (
         SELECT order_id, sale_id, user_id, status, quantity, variant, amount, currency, expires_at, refund_due, NULL AS failure_reason, created_at, closed_at
         FROM orders WHERE ${column} = ?1
         UNION ALL
         SELECT f.order_id, f.sale_id, f.user_id, 'failed', f.quantity, f.variant, COALESCE(v.price, s.price) * f.quantity, s.currency, NULL, 0, f.reason, f.created_at, f.failed_at
         FROM failed_orders f JOIN sales s ON s.id = f.sale_id
         LEFT JOIN sale_variants v ON v.sale_id = f.sale_id AND v.variant_id = f.variant WHERE f.${column} = ?1
       )
       WHERE (?2 IS NULL OR status = ?2) AND (created_at < ?3 OR (created_at = ?3 AND order_id < ?4 AND ?4 != ''))
       ORDER BY created_at DESC, order_id DESC LIMIT ?5`,
    )
    .bind(value, status ?? null, after.createdAt, after.orderId, limit + 1)
    .all<ListedRow>();
  const rows = results.slice(0, limit);
  const last = rows.at(-1);
  const nextCursor = results.length > limit && last ? encodeCursor({ createdAt: last.created_at, orderId: last.order_id }) : null;
  return { rows, nextCursor };
}

const adminView = (r: ListedRow): AdminOrderView => ({
  ...orderView(r),
  createdAt: new Date(r.created_at).toISOString(),
  closedAt: r.closed_at === null ? null : new Date(r.closed_at).toISOString(),
});

/** GET /admin/sales/:saleId/orders */
export async function listSaleOrders(
  db: D1Database,
  saleId: string,
  query: { status?: string; cursor?: string; limit: number },
): Promise<AdminOrderPage> {
  const { rows, nextCursor } = await page(db, { saleId }, query.status, decodeCursor(query.cursor), query.limit);
  return { orders: rows.map(adminView), nextCursor };
}

/** GET /api/orders: the buyer's own orders across sales. */
export async function listBuyerOrders(
  db: D1Database,
  userId: string,
  cursor: string | undefined,
  limit: number,
): Promise<BuyerOrderPage> {
  const { rows, nextCursor } = await page(db, { userId }, undefined, decodeCursor(cursor), limit);
  return { orders: rows.map(orderView), nextCursor };
}

const CSV_COLUMNS = [
  "orderId",
  "saleId",
  "userId",
  "status",
  "quantity",
  "variant",
  "amount",
  "currency",
  "createdAt",
  "closedAt",
  "refundDue",
] as const;

/** GET /admin/sales/:saleId/orders.csv: the list as CSV, read and sent EXPORT_PAGE_SIZE rows at a time. */
export function saleOrdersCsv(db: D1Database, saleId: string, status: string | undefined): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let after = decodeCursor(undefined);
  let headerSent = false;
  let done = false;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (!headerSent) {
          headerSent = true;
          controller.enqueue(encoder.encode(csvRow(CSV_COLUMNS)));
          return;
        }
        if (done) return controller.close();
        const { rows, nextCursor } = await page(db, { saleId }, status, after, EXPORT_PAGE_SIZE);
        if (nextCursor === null) done = true;
        else after = decodeCursor(nextCursor);
        if (rows.length === 0) return controller.close();
        const lines = rows.map((r) => {
          const v = adminView(r);
          return csvRow(CSV_COLUMNS.map((c) => v[c]));
        });
        controller.enqueue(encoder.encode(lines.join("")));
      },
    },
    { highWaterMark: 0 },
  );
}

/** GET /admin/orders/:orderId: undefined when D1 has no such order. */
export async function orderDetail(db: D1Database, orderId: string): Promise<AdminOrderDetail | undefined> {
  const [found, history, payments] = await db.batch<Record<string, unknown>>([
    db
      .prepare(
        `SELECT order_id, sale_id, user_id, status, quantity, variant, amount, currency, expires_at, refund_due, NULL AS failure_reason, created_at, closed_at
         FROM orders WHERE order_id = ?1
         UNION ALL
         SELECT f.order_id, f.sale_id, f.user_id, 'failed', f.quantity, f.variant, COALESCE(v.price, s.price) * f.quantity, s.currency, NULL, 0, f.reason, f.created_at, f.failed_at
         FROM failed_orders f JOIN sales s ON s.id = f.sale_id
         LEFT JOIN sale_variants v ON v.sale_id = f.sale_id AND v.variant_id = f.variant WHERE f.order_id = ?1 LIMIT 1`,
      )
      .bind(orderId),
    db.prepare("SELECT id, type, created_at FROM order_events WHERE subject = ? ORDER BY seq").bind(orderId),
    db
      .prepare(
        "SELECT status, provider_ref, decline_reason, created_at, updated_at FROM payments WHERE order_id = ? ORDER BY created_at",
      )
      .bind(orderId),
  ]);
  const row = found?.results[0] as ListedRow | undefined;
  if (!row) return undefined;
  return {
    ...adminView(row),
    history: ((history?.results ?? []) as { id: string; type: string; created_at: number }[]).map((h) => ({
      eventId: h.id,
      type: h.type,
      at: new Date(h.created_at).toISOString(),
    })),
    payments: (
      (payments?.results ?? []) as {
        status: string;
        provider_ref: string | null;
        decline_reason: string | null;
        created_at: number;
        updated_at: number;
      }[]
    ).map((p) => ({
      status: p.status,
      providerRef: p.provider_ref,
      declineReason: p.decline_reason,
      createdAt: new Date(p.created_at).toISOString(),
      updatedAt: new Date(p.updated_at).toISOString(),
    })),
    deliveries: await deliveriesOf(db, orderId),
  };
}
