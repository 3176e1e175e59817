// Lists of orders, newest first with a keyset cursor: a sale's (the admin's list and its CSV
// export) and a buyer's across sales; and one order with its history, payments and events.
// Failed orders (failed_orders) are listed with status 'failed'. Orders go out by their public
// ids (src/shared/public-order-id.ts), cursors included.

import type { AdminOrderDetail, AdminOrderPage, AdminOrderView, BuyerOrderPage } from "../shared/api-types";
import type { OrderIdCipher } from "../shared/public-order-id";
import { csvRow } from "./csv";
import { deliveriesOf } from "./event-deliveries";
import { listedOrders, type OrderRow, orderView, viewsInTurn } from "./order-views";

/** Rows a CSV export reads at a time: its memory is one page, whatever the sale's size. */
export const EXPORT_PAGE_SIZE = 1000;

type ListedRow = OrderRow & { created_at: number; closed_at: number | null };

interface Position {
  createdAt: number;
  orderId: string;
}

/** `<createdAt>.<public order id>` of the last order of a page. */
const encodeCursor = async (p: Position, ids: OrderIdCipher) => `${p.createdAt}.${await ids.toPublic(p.orderId)}`;
/** A cursor's position; one made before public ids carries the internal id, which stands as it is. */
const decodeCursor = async (cursor: string | undefined, ids: OrderIdCipher): Promise<Position> => {
  if (cursor === undefined) return FIRST;
  const [createdAt, orderId] = cursor.split(".");
  return { createdAt: Number(createdAt), orderId: await ids.toInternal(orderId as string) };
};
/** Before the newest order: where a list without a cursor starts. */
const FIRST: Position = { createdAt: Number.MAX_SAFE_INTEGER, orderId: "" };

type Owner = { saleId: string } | { userId: string };

/** One page of orders (and failed orders) of a sale or a buyer, newest first, after `after`. */
async function page(db: D1Database, owner: Owner, status: string | undefined, after: Position, limit: number) {
  const [column, value] = "saleId" in owner ? ["sale_id", Number(owner.saleId)] : ["user_id", owner.userId];
  const { results } = await db
    .prepare(
      `SELECT * FROM (${listedOrders(`t.${column} = ?1`)})
       WHERE (?2 IS NULL OR status = ?2) AND (created_at < ?3 OR (created_at = ?3 AND order_id < ?4 AND ?4 != ''))
       ORDER BY created_at DESC, order_id DESC LIMIT ?5`,
    )
    .bind(value, status ?? null, after.createdAt, after.orderId, limit + 1)
    .all<ListedRow>();
  const rows = results.slice(0, limit);
  const last = rows.at(-1);
  const next = results.length > limit && last ? { createdAt: last.created_at, orderId: last.order_id } : null;
  return { rows, next };
}

const adminView = async (r: ListedRow, ids: OrderIdCipher): Promise<AdminOrderView> => ({
  ...(await orderView(r, ids)),
  createdAt: new Date(r.created_at).toISOString(),
  closedAt: r.closed_at === null ? null : new Date(r.closed_at).toISOString(),
});

/** GET /admin/sales/:saleId/orders */
export async function listSaleOrders(
  db: D1Database,
  saleId: string,
  query: { status?: string; cursor?: string; limit: number },
  ids: OrderIdCipher,
): Promise<AdminOrderPage> {
  const { rows, next } = await page(db, { saleId }, query.status, await decodeCursor(query.cursor, ids), query.limit);
  return { orders: await viewsInTurn(rows, (r) => adminView(r, ids)), nextCursor: next && (await encodeCursor(next, ids)) };
}

/** GET /api/orders: the buyer's own orders across sales. */
export async function listBuyerOrders(
  db: D1Database,
  userId: string,
  cursor: string | undefined,
  limit: number,
  ids: OrderIdCipher,
): Promise<BuyerOrderPage> {
  const { rows, next } = await page(db, { userId }, undefined, await decodeCursor(cursor, ids), limit);
  return { orders: await viewsInTurn(rows, (r) => orderView(r, ids)), nextCursor: next && (await encodeCursor(next, ids)) };
}

/** The export's columns: the list's fields, the amount in the currency's units ("49.00"). */
const CSV_COLUMNS = [
  "orderId",
  "reference",
  "saleId",
  "saleName",
  "userId",
  "status",
  "quantity",
  "variant",
  "variantLabel",
  "amount",
  "currency",
  "createdAt",
  "closedAt",
  "refundDue",
] as const;

/** Decimals of each currency's amounts, as Intl knows them (2 for EUR, 0 for JPY, 3 for KWD): one formatter each per isolate. */
const decimals = new Map<string, number>();
const decimalsOf = (currency: string): number => {
  let known = decimals.get(currency);
  if (known === undefined) {
    known = new Intl.NumberFormat("en", { style: "currency", currency }).resolvedOptions().maximumFractionDigits ?? 2;
    decimals.set(currency, known);
  }
  return known;
};

/** Minor units in the currency's own units, exactly: 4900 EUR -> "49.00", 4900 JPY -> "4900". */
export function inCurrencyUnits(minor: number, currency: string): string {
  const places = decimalsOf(currency);
  if (places === 0) return String(minor);
  const digits = String(minor).padStart(places + 1, "0");
  return `${digits.slice(0, -places)}.${digits.slice(-places)}`;
}

/** GET /admin/sales/:saleId/orders.csv: the list as CSV, read and sent EXPORT_PAGE_SIZE rows at a time. */
export function saleOrdersCsv(
  db: D1Database,
  saleId: string,
  status: string | undefined,
  ids: OrderIdCipher,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let after = FIRST;
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
        const { rows, next } = await page(db, { saleId }, status, after, EXPORT_PAGE_SIZE);
        if (next === null) done = true;
        else after = next;
        if (rows.length === 0) return controller.close();
        const lines = await viewsInTurn(rows, async (r) => {
          const v = { ...(await adminView(r, ids)), amount: inCurrencyUnits(r.amount, r.currency) };
          return csvRow(CSV_COLUMNS.map((c) => v[c]));
        });
        controller.enqueue(encoder.encode(lines.join("")));
      },
    },
    { highWaterMark: 0 },
  );
}

/** GET /admin/orders/:orderId (the internal id): undefined when D1 has no such order. */
export async function orderDetail(db: D1Database, orderId: string, ids: OrderIdCipher): Promise<AdminOrderDetail | undefined> {
  const [found, history, payments, traced] = await db.batch<Record<string, unknown>>([
    db.prepare(`${listedOrders("t.order_id = ?1")} LIMIT 1`).bind(orderId),
    db.prepare("SELECT id, type, created_at FROM order_events WHERE subject = ? ORDER BY seq").bind(orderId),
    db
      .prepare(
        "SELECT status, provider_ref, decline_reason, created_at, updated_at FROM payments WHERE order_id = ? ORDER BY created_at",
      )
      .bind(orderId),
    db.prepare("SELECT traceparent FROM orders WHERE order_id = ?").bind(orderId),
  ]);
  const row = found?.results[0] as ListedRow | undefined;
  if (!row) return undefined;
  return {
    ...(await adminView(row, ids)),
    traceparent: (traced?.results[0]?.traceparent as string | null | undefined) ?? null,
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
    deliveries: await deliveriesOf(db, orderId, ids),
  };
}
