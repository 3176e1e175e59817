import { ID_SLOTS } from "../shared/order-id";
import type { Sale } from "./sale";

interface SaleRow {
  id: number;
  name: string;
  stock: number;
  starts_at: number;
  ends_at: number;
  id_slot: number;
  admit_rate: number;
  admit_burst: number;
  price: number;
  currency: string;
  payment_window_sec: number;
  per_user_limit: number;
}

const fromRow = (row: SaleRow): Sale => ({
  id: String(row.id),
  name: row.name,
  stock: row.stock,
  startsAt: row.starts_at,
  endsAt: row.ends_at,
  idSlot: row.id_slot,
  admission: { rate: row.admit_rate, burst: row.admit_burst },
  price: row.price,
  currency: row.currency,
  paymentWindowSec: row.payment_window_sec,
  perUserLimit: row.per_user_limit,
});

const SALE_COLUMNS =
  "id, name, stock, starts_at, ends_at, id_slot, admit_rate, admit_burst, price, currency, payment_window_sec, per_user_limit";

/** A random id in [1, 2^48): unique without coordination, short enough for a URL. */
function randomSaleId(): number {
  const [hi = 0, lo = 0] = crypto.getRandomValues(new Uint32Array(2));
  return (hi & 0xffff) * 2 ** 32 + lo || 1;
}

export type NewSale = Omit<Sale, "id" | "idSlot">;

/** A create's Idempotency-Key and the fingerprint of its request. */
export interface IdempotencyRecord {
  key: string;
  fingerprint: string;
}

/**
 * Inserts a sale with the lowest order-id slot that no sale with an overlapping window holds.
 * Choosing the slot inside the INSERT keeps it race-free: D1 runs one statement at a time.
 * Returns undefined when every slot is taken by overlapping sales.
 */
export async function insertSale(
  db: D1Database,
  sale: NewSale,
  idempotency: IdempotencyRecord | null,
): Promise<Sale | undefined> {
  const row = await db
    .prepare(
      `WITH RECURSIVE slot(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM slot WHERE n < ${ID_SLOTS - 1})
       INSERT INTO sales (id, name, stock, starts_at, ends_at, id_slot, admit_rate, admit_burst, idempotency_key, created_at,
                          idempotency_fingerprint, price, currency, payment_window_sec, per_user_limit)
       SELECT ?9, ?1, ?2, ?3, ?4, n, ?5, ?6, ?7, ?8, ?10, ?11, ?12, ?13, ?14 FROM slot
       -- windows padded by a second: ids carry whole seconds, so neighbours must not share one
       WHERE n NOT IN (SELECT id_slot FROM sales WHERE starts_at < ?4 + 1000 AND ends_at > ?3 - 1000)
       ORDER BY n LIMIT 1
       ON CONFLICT (idempotency_key) DO NOTHING
       RETURNING ${SALE_COLUMNS}`,
    )
    .bind(
      sale.name,
      sale.stock,
      sale.startsAt,
      sale.endsAt,
      sale.admission.rate,
      sale.admission.burst,
      idempotency?.key ?? null,
      Date.now(),
      randomSaleId(),
      idempotency?.fingerprint ?? null,
      sale.price,
      sale.currency,
      sale.paymentWindowSec,
      sale.perUserLimit,
    )
    .first<SaleRow>();
  return row ? fromRow(row) : undefined;
}

/** The sale created with `key`, and the fingerprint of the request that created it (null before fingerprints). */
export async function findSaleByIdempotencyKey(
  db: D1Database,
  key: string,
): Promise<{ sale: Sale; fingerprint: string | null } | undefined> {
  const row = await db
    .prepare(`SELECT ${SALE_COLUMNS}, idempotency_fingerprint FROM sales WHERE idempotency_key = ?`)
    .bind(key)
    .first<SaleRow & { idempotency_fingerprint: string | null }>();
  return row ? { sale: fromRow(row), fingerprint: row.idempotency_fingerprint } : undefined;
}

export async function findSale(db: D1Database, saleId: string): Promise<Sale | undefined> {
  const row = await db.prepare(`SELECT ${SALE_COLUMNS} FROM sales WHERE id = ?`).bind(Number(saleId)).first<SaleRow>();
  return row ? fromRow(row) : undefined;
}

/** The sale that held `slot` at `atMs`: the one whose window minted an order id. */
export async function findSaleBySlotAt(db: D1Database, slot: number, atMs: number): Promise<Sale | undefined> {
  const row = await db
    .prepare(`SELECT ${SALE_COLUMNS} FROM sales WHERE id_slot = ?1 AND starts_at <= ?2 AND ends_at > ?3`)
    // Ids carry whole seconds: the reservation happened somewhere in [atMs, atMs + 1000).
    .bind(slot, atMs + 999, atMs)
    .first<SaleRow>();
  return row ? fromRow(row) : undefined;
}

/** Sales whose outboxes may still hold orders: every sale that ended less than `withinMs` ago. */
export async function listRecentSaleIds(db: D1Database, now: number, withinMs: number): Promise<string[]> {
  const { results } = await db
    .prepare("SELECT id FROM sales WHERE ends_at > ? ORDER BY id")
    .bind(now - withinMs)
    .all<{ id: number }>();
  return results.map((r) => String(r.id));
}
