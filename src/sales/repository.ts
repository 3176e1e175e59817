import { type BucketSplit, bucketKeyOf, newBucketKey } from "../shared/keys";
import { ID_SLOTS } from "../shared/order-id";
import type { QueueMode } from "../shared/requests";
import {
  opensToBuyersAt,
  type Sale,
  type SaleDraw,
  type SaleLane,
  type SaleState,
  type SaleVariant,
  type WaitingRoomSettings,
} from "./sale";

export interface SaleRow {
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
  human_check: number;
  description: string;
  image_url: string | null;
  state: SaleState;
  version: number;
  archived_at: number | null;
  queue_mode: QueueMode;
  queue_prequeue_sec: number;
  queue_admit_per_sec: number;
  queue_pass_ttl_sec: number;
  queue_seed: string | null;
  queue_seed_commitment: string | null;
  queue_paused: number;
  queue_opened_at: number | null;
  notice: string | null;
  redis_buckets: number;
  draw_opens_at: number | null;
  draw_closes_at: number | null;
  draw_beacon_url: string | null;
  draw_beacon_round: number | null;
  bucket_key: string | null;
  /** JSON array of the sale's lanes (SaleLane). */
  lanes: string;
  /** JSON array of the sale's variants in the admin's order (see VARIANTS_COLUMN). */
  variants: string;
}

export const fromRow = (row: SaleRow): Sale => ({
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
  humanCheck: row.human_check === 1,
  description: row.description,
  imageUrl: row.image_url,
  state: row.state,
  version: row.version,
  archivedAt: row.archived_at,
  buckets: row.redis_buckets,
  bucketKey: row.bucket_key === null ? null : bucketKeyOf(row.bucket_key),
  queue: {
    mode: row.queue_mode,
    prequeueSec: row.queue_prequeue_sec,
    admitPerSec: row.queue_admit_per_sec,
    passTtlSec: row.queue_pass_ttl_sec,
    seed: row.queue_seed,
    seedCommitment: row.queue_seed_commitment,
  },
  admissionPaused: row.queue_paused === 1,
  queueOpenedAt: row.queue_opened_at,
  notice: row.notice,
  draw:
    row.draw_opens_at === null || row.draw_closes_at === null
      ? null
      : {
          opensAt: row.draw_opens_at,
          closesAt: row.draw_closes_at,
          beacon:
            row.draw_beacon_url === null || row.draw_beacon_round === null
              ? null
              : { url: row.draw_beacon_url, round: row.draw_beacon_round },
        },
  lanes: JSON.parse(row.lanes) as SaleLane[],
  variants: JSON.parse(row.variants) as SaleVariant[],
});

/** The sale's variants as one JSON array, in the admin's order, read beside its row. */
const VARIANTS_COLUMN = `(SELECT json_group_array(json_object('id', variant_id, 'label', label, 'stock', stock, 'price', price))
   FROM (SELECT * FROM sale_variants v WHERE v.sale_id = sales.id ORDER BY position)) AS variants`;

export const SALE_COLUMNS =
  "id, name, stock, starts_at, ends_at, id_slot, admit_rate, admit_burst, price, currency, payment_window_sec, per_user_limit, " +
  "description, image_url, state, version, archived_at, queue_mode, queue_prequeue_sec, queue_admit_per_sec, queue_pass_ttl_sec, " +
  "queue_seed, queue_seed_commitment, queue_paused, queue_opened_at, notice, human_check, redis_buckets, draw_opens_at, " +
  "draw_closes_at, draw_beacon_url, draw_beacon_round, " +
  `bucket_key, lanes, ${VARIANTS_COLUMN}`;

/**
 * Records the variants of the sale `saleId`, at their positions, when the statement before it
 * in the same batch changed a row (it inserted or edited the sale): a create that found its
 * key taken, or an edit that lost its race, adds nothing. A variant recorded before takes the
 * new label, price and stock (editSale has checked it only grows).
 */
const upsertVariants = (db: D1Database, saleId: number, variants: SaleVariant[]) =>
  db
    .prepare(
      `INSERT INTO sale_variants (sale_id, variant_id, label, stock, price, position)
       SELECT ?1, value ->> '$.id', value ->> '$.label', value ->> '$.stock', value ->> '$.price', key
       FROM json_each(?2) WHERE changes() = 1
       ON CONFLICT (sale_id, variant_id) DO UPDATE SET label = excluded.label, stock = excluded.stock, price = excluded.price`,
    )
    .bind(saleId, JSON.stringify(variants));

const selectSale = (db: D1Database, saleId: number) => db.prepare(`SELECT ${SALE_COLUMNS} FROM sales WHERE id = ?`).bind(saleId);

/**
 * The lowest order-id slot no other sale holds over [?start, ?end] (a sale's window from when it
 * first sells, its first lane's start where it has lanes; windows padded by a second,
 * a margin between neighbours sharing a slot), or NULL when all are taken.
 */
const FREE_SLOT = (start: string, end: string, self: string) => `(
  WITH RECURSIVE slot(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM slot WHERE n < ${ID_SLOTS - 1})
  SELECT n FROM slot
  WHERE n NOT IN (SELECT id_slot FROM sales WHERE id != ${self} AND opens_at < ${end} + 1000 AND ends_at > ${start} - 1000)
  ORDER BY n LIMIT 1)`;

/** A draw's four columns: opens, closes, beacon URL, beacon round (all NULL: not a draw). */
const drawColumns = (draw: SaleDraw | null) =>
  [draw?.opensAt ?? null, draw?.closesAt ?? null, draw?.beacon?.url ?? null, draw?.beacon?.round ?? null] as const;

/** A random id in [1, 2^48): unique without coordination, short enough for a URL. */
function randomSaleId(): number {
  const [hi = 0, lo = 0] = crypto.getRandomValues(new Uint32Array(2));
  return (hi & 0xffff) * 2 ** 32 + lo || 1;
}

export type NewSale = Omit<
  Sale,
  "id" | "idSlot" | "state" | "version" | "archivedAt" | "bucketKey" | "admissionPaused" | "queueOpenedAt" | "notice"
>;

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
  const id = randomSaleId();
  const insert = db
    .prepare(
      `INSERT INTO sales (id, name, stock, starts_at, ends_at, id_slot, admit_rate, admit_burst, idempotency_key, created_at,
                          idempotency_fingerprint, price, currency, payment_window_sec, per_user_limit, description, image_url,
                          queue_mode, queue_prequeue_sec, queue_admit_per_sec, queue_pass_ttl_sec, queue_seed, queue_seed_commitment,
                          human_check, redis_buckets, draw_opens_at, draw_closes_at, draw_beacon_url, draw_beacon_round, bucket_key,
                          lanes, opens_at)
       SELECT ?9, ?1, ?2, ?3, ?4, slot, ?5, ?6, ?7, ?8, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24,
              ?25, ?26, ?27, ?28, ?29, ?30, ?31
       FROM (SELECT ${FREE_SLOT("?31", "?4", "?9")} AS slot) WHERE slot IS NOT NULL
       ON CONFLICT (idempotency_key) DO NOTHING`,
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
      id,
      idempotency?.fingerprint ?? null,
      sale.price,
      sale.currency,
      sale.paymentWindowSec,
      sale.perUserLimit,
      sale.description,
      sale.imageUrl,
      sale.queue.mode,
      sale.queue.prequeueSec,
      sale.queue.admitPerSec,
      sale.queue.passTtlSec,
      sale.queue.seed,
      sale.queue.seedCommitment,
      sale.humanCheck ? 1 : 0,
      sale.buckets,
      ...drawColumns(sale.draw),
      newBucketKey(),
      JSON.stringify(sale.lanes),
      opensToBuyersAt(sale),
    );
  // One transaction: the sale, its variants, and the sale as recorded (none when the insert changed nothing).
  const [inserted, , recorded] = await db.batch<SaleRow>([insert, upsertVariants(db, id, sale.variants), selectSale(db, id)]);
  const row = inserted?.meta.changes === 1 ? recorded?.results[0] : undefined;
  return row ? fromRow(row) : undefined;
}

/** What an edit changes; each field absent stays as it is. */
export interface SaleChanges {
  name?: string;
  description?: string;
  imageUrl?: string | null;
  startsAt?: number;
  endsAt?: number;
  admission?: { rate: number; burst: number };
  stock?: number;
  queue?: WaitingRoomSettings;
  humanCheck?: boolean;
  draw?: SaleDraw | null;
  lanes?: SaleLane[];
  /** Every variant the sale will have, the ones it had first (editSale merges an edit's over them). */
  variants?: SaleVariant[];
}

/**
 * Applies an edit to the sale as it was read at `version` (optimistic concurrency: a
 * concurrent edit makes this one change nothing, and the caller reads again), with a fresh
 * order-id slot for the new window. A change of window or admission applies only while the
 * sale has not started by D1's clock. The bucket count grows to `buckets` (what the new stock
 * needs) only while nobody can have joined, entered or bought, by D1's clock: before the
 * waiting room's first line opens or the draw takes entries (the start, for a sale with
 * neither), when no per-buyer record exists to be found in the wrong bucket; later the sale
 * keeps its count. The waiting room's settings, and a queued sale's lanes (each has a line of
 * its own), change only before that too. Returns the sale as edited, undefined when the
 * version moved on (or the sale started), or "NO_ID_SLOT" when every slot is taken over the
 * new window.
 */
export async function updateSale(
  db: D1Database,
  sale: Sale,
  changes: SaleChanges,
  buckets: number,
): Promise<Sale | undefined | "NO_ID_SLOT"> {
  const next = { ...sale, ...changes, admission: changes.admission ?? sale.admission, queue: changes.queue ?? sale.queue };
  const update = db
    .prepare(
      `UPDATE sales SET name = ?3, description = ?4, image_url = ?5, starts_at = ?6, ends_at = ?7,
              admit_rate = ?8, admit_burst = ?9, stock = ?10, version = version + 1,
              queue_mode = ?11, queue_prequeue_sec = ?12, queue_admit_per_sec = ?13, queue_pass_ttl_sec = ?14,
              queue_seed = COALESCE(queue_seed, ?15), queue_seed_commitment = COALESCE(queue_seed_commitment, ?16),
              human_check = ?17, draw_opens_at = ?19, draw_closes_at = ?20, draw_beacon_url = ?21, draw_beacon_round = ?22,
              lanes = ?23, opens_at = ?24,
              redis_buckets = CASE WHEN COALESCE(draw_opens_at, CASE queue_mode WHEN 'off' THEN opens_at ELSE opens_at - queue_prequeue_sec * 1000 END)
                                        > CAST(unixepoch('subsec') * 1000 AS INTEGER)
                                   THEN MAX(redis_buckets, ?18) ELSE redis_buckets END,
              id_slot = CASE WHEN ?24 = opens_at AND ?7 = ends_at THEN id_slot ELSE COALESCE(${FREE_SLOT("?24", "?7", "?1")}, -1) END
       WHERE id = ?1 AND version = ?2
         AND ((?6 = starts_at AND ?7 = ends_at AND ?8 = admit_rate AND ?9 = admit_burst AND ?17 = human_check AND ?23 = lanes)
              OR opens_at > CAST(unixepoch('subsec') * 1000 AS INTEGER))
         AND ((?19 IS draw_opens_at AND ?20 IS draw_closes_at AND ?21 IS draw_beacon_url AND ?22 IS draw_beacon_round
               AND ?10 = stock AND ?17 = human_check)
              OR draw_opens_at IS NULL OR draw_opens_at > CAST(unixepoch('subsec') * 1000 AS INTEGER))
         AND ((?11 = queue_mode AND ?12 = queue_prequeue_sec AND ?13 = queue_admit_per_sec AND ?14 = queue_pass_ttl_sec
               AND (?23 = lanes OR queue_mode = 'off'))
              OR opens_at - queue_prequeue_sec * 1000 > CAST(unixepoch('subsec') * 1000 AS INTEGER))`,
    )
    .bind(
      Number(sale.id),
      sale.version,
      next.name,
      next.description,
      next.imageUrl,
      next.startsAt,
      next.endsAt,
      next.admission.rate,
      next.admission.burst,
      next.stock,
      next.queue.mode,
      next.queue.prequeueSec,
      next.queue.admitPerSec,
      next.queue.passTtlSec,
      next.queue.seed,
      next.queue.seedCommitment,
      next.humanCheck ? 1 : 0,
      buckets,
      ...drawColumns(next.draw),
      JSON.stringify(next.lanes),
      opensToBuyersAt(next),
    );
  const id = Number(sale.id);
  const written = await db
    .batch<SaleRow>([update, upsertVariants(db, id, changes.variants ?? []), selectSale(db, id)])
    // id_slot -1 breaks CHECK (id_slot BETWEEN 0 AND 4095): no slot was free.
    .catch((err: unknown) => {
      if (/CHECK constraint failed: id_slot/.test(String(err))) return "NO_ID_SLOT" as const;
      throw err;
    });
  if (written === "NO_ID_SLOT") return written;
  const [updated, , recorded] = written;
  const row = updated?.meta.changes === 1 ? recorded?.results[0] : undefined;
  return row ? fromRow(row) : undefined;
}

/**
 * Pauses, resumes or cancels a sale, unless it is in that state already (nothing changes,
 * the version stays) or cancelled (for good). Returns the sale as it is after the statement,
 * undefined when there is no such sale.
 */
export async function setSaleState(db: D1Database, saleId: string, state: SaleState): Promise<Sale | undefined> {
  const [, row] = await db.batch<SaleRow>([
    db
      .prepare("UPDATE sales SET state = ?2, version = version + 1 WHERE id = ?1 AND state != ?2 AND state != 'cancelled'")
      .bind(Number(saleId), state),
    db.prepare(`SELECT ${SALE_COLUMNS} FROM sales WHERE id = ?`).bind(Number(saleId)),
  ]);
  const found = row?.results[0];
  return found ? fromRow(found) : undefined;
}

/** Where a catalog page starts: after the sale that ended the previous one. */
export interface CatalogCursor {
  startsAt: number;
  id: string;
}

/**
 * Sales that have not ended and are not cancelled, by start (then id), after `cursor`: one
 * more than `limit` is read, so the caller knows whether a next page exists.
 */
export async function catalogSales(
  db: D1Database,
  now: number,
  cursor: CatalogCursor | undefined,
  limit: number,
): Promise<Sale[]> {
  const { results } = await db
    .prepare(
      `SELECT ${SALE_COLUMNS} FROM sales
       WHERE ends_at > ?1 AND state != 'cancelled' AND (starts_at > ?2 OR (starts_at = ?2 AND id > ?3))
       ORDER BY starts_at, id LIMIT ?4`,
    )
    .bind(now, cursor?.startsAt ?? -1, Number(cursor?.id ?? 0), limit + 1)
    .all<SaleRow>();
  return results.map(fromRow);
}

/** Sales created since `sinceMs`: the catalog's Bloom filter takes them in again, in case a create could not. */
export async function saleIdsCreatedSince(db: D1Database, sinceMs: number): Promise<string[]> {
  const { results } = await db.prepare("SELECT id FROM sales WHERE created_at >= ?").bind(sinceMs).all<{ id: number }>();
  return results.map((r) => String(r.id));
}

/** Every sale id, a page at a time (for building the catalog's Bloom filter). */
export async function saleIdsAfter(db: D1Database, after: string, limit: number): Promise<string[]> {
  const { results } = await db
    .prepare("SELECT id FROM sales WHERE id > ? ORDER BY id LIMIT ?")
    .bind(Number(after), limit)
    .all<{ id: number }>();
  return results.map((r) => String(r.id));
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
    .prepare(`SELECT ${SALE_COLUMNS} FROM sales WHERE id_slot = ?1 AND opens_at <= ?2 AND ends_at > ?2`)
    // Ids carry the millisecond they were minted in, inside the sale's window.
    .bind(slot, atMs)
    .first<SaleRow>();
  return row ? fromRow(row) : undefined;
}

/**
 * Sales whose outboxes may still hold orders, with how their buyers are split: every sale that
 * ended less than `withinMs` ago, except archived ones (settled, their keys gone).
 */
export async function listRecentSales(
  db: D1Database,
  now: number,
  withinMs: number,
): Promise<{ saleId: string; split: BucketSplit }[]> {
  const { results } = await db
    .prepare("SELECT id, redis_buckets, bucket_key FROM sales WHERE ends_at > ? AND archived_at IS NULL ORDER BY id")
    .bind(now - withinMs)
    .all<{ id: number; redis_buckets: number; bucket_key: string | null }>();
  return results.map((r) => ({
    saleId: String(r.id),
    split: { count: r.redis_buckets, key: r.bucket_key === null ? null : bucketKeyOf(r.bucket_key) },
  }));
}

/** Those of `saleIds` D1 holds, by id: one query. */
export async function findSales(db: D1Database, saleIds: string[]): Promise<Map<string, Sale>> {
  const { results } = await db
    .prepare(`SELECT ${SALE_COLUMNS} FROM sales WHERE id IN (${saleIds.map(() => "?").join(", ")})`)
    .bind(...saleIds.map(Number))
    .all<SaleRow>();
  return new Map(results.map((row) => [String(row.id), fromRow(row)]));
}
