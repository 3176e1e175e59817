// D1's record of a sale's recovery from a Redis that lost it or came back behind
// (migrations/0010_sale_recovery.sql). It lives in D1 because it must outlive the loss it records.

/** live: selling from Redis; behind: detected, refusing checkouts until rebuilt; rebuilding: a heal is under way. */
export type RecoveryState = "live" | "behind" | "rebuilding";

export interface RecoveryRecord {
  state: RecoveryState;
  detectedAt: number | null;
  detectedBy: string | null;
  /** The highest order sequence reported minted before the loss (0: none reported). */
  knownSeq: number;
  /** How far the sequence stood ahead of D1's count of ids after the last rebuild. */
  seqOffset: number;
  rebuiltAt: number | null;
  rebuilds: number;
}

/** Why orders end `failed` when Redis had sold what D1 cannot record (failed_orders.reason). */
export const REDIS_ROLLBACK = "REDIS_ROLLBACK";

interface RecoveryRow {
  state: RecoveryState;
  detected_at: number | null;
  detected_by: string | null;
  known_seq: number;
  seq_offset: number;
  rebuilt_at: number | null;
  rebuilds: number;
}

const LIVE: RecoveryRecord = {
  state: "live",
  detectedAt: null,
  detectedBy: null,
  knownSeq: 0,
  seqOffset: 0,
  rebuiltAt: null,
  rebuilds: 0,
};

const fromRow = (r: RecoveryRow): RecoveryRecord => ({
  state: r.state,
  detectedAt: r.detected_at,
  detectedBy: r.detected_by,
  knownSeq: r.known_seq,
  seqOffset: r.seq_offset,
  rebuiltAt: r.rebuilt_at,
  rebuilds: r.rebuilds,
});

export async function findRecovery(db: D1Database, saleId: string): Promise<RecoveryRecord> {
  const row = await db.prepare("SELECT * FROM sale_recovery WHERE sale_id = ?").bind(Number(saleId)).first<RecoveryRow>();
  return row ? fromRow(row) : LIVE;
}

/**
 * Records the sale as behind, keeping the highest sequence anyone reported. A rebuild under
 * way stays `rebuilding`: it reads the new sequence before it decides.
 */
export async function recordBehind(
  db: D1Database,
  saleId: string,
  by: string,
  knownSeq: number,
  now = Date.now(),
): Promise<void> {
  await db
    .prepare(
      `INSERT INTO sale_recovery (sale_id, state, detected_at, detected_by, known_seq) VALUES (?1, 'behind', ?2, ?3, ?4)
       ON CONFLICT (sale_id) DO UPDATE SET
         state = CASE WHEN state = 'rebuilding' THEN 'rebuilding' ELSE 'behind' END,
         detected_at = CASE WHEN state = 'live' THEN ?2 ELSE detected_at END,
         detected_by = CASE WHEN state = 'live' THEN ?3 ELSE detected_by END,
         known_seq = MAX(known_seq, ?4)`,
    )
    .bind(Number(saleId), now, by, knownSeq)
    .run();
}

export async function recordRebuilding(db: D1Database, saleId: string): Promise<void> {
  await db
    .prepare("UPDATE sale_recovery SET state = 'rebuilding' WHERE sale_id = ? AND state = 'behind'")
    .bind(Number(saleId))
    .run();
}

/** The sale sells again: rebuilt now (with the sequence `seqOffset` ahead of D1's count), or found rebuilt by another heal. */
export async function recordLive(db: D1Database, saleId: string, rebuilt?: { seqOffset: number; at: number }): Promise<void> {
  const statement = rebuilt
    ? db
        .prepare(
          `INSERT INTO sale_recovery (sale_id, state, rebuilt_at, rebuilds, seq_offset) VALUES (?1, 'live', ?2, 1, ?3)
           ON CONFLICT (sale_id) DO UPDATE SET state = 'live', rebuilt_at = ?2, rebuilds = rebuilds + 1, seq_offset = ?3`,
        )
        .bind(Number(saleId), rebuilt.at, rebuilt.seqOffset)
    : db.prepare("UPDATE sale_recovery SET state = 'live' WHERE sale_id = ?1").bind(Number(saleId));
  await statement.run();
}

/** Sales with a recovery not finished: what the cron heals. */
export async function salesNotLive(db: D1Database): Promise<string[]> {
  const { results } = await db
    .prepare(
      `SELECT r.sale_id AS id FROM sale_recovery r JOIN sales s ON s.id = r.sale_id
       WHERE r.state != 'live' AND s.archived_at IS NULL ORDER BY r.sale_id`,
    )
    .all<{ id: number }>();
  return results.map((r) => String(r.id));
}

/** What D1 knows of a sale still selling, to compare with Redis' figures. */
export interface SellingSale {
  saleId: string;
  stock: number;
  /** Units D1 records as held. */
  sold: number;
  /** Order ids D1 knows (settled in any state, or failed). */
  landed: number;
  seqOffset: number;
}

/** Sales not ended, cancelled nor archived whose recovery, if any, is finished. */
export async function sellingSales(db: D1Database, now = Date.now()): Promise<SellingSale[]> {
  const { results } = await db
    .prepare(
      `SELECT s.id, s.stock, s.sold,
              (SELECT COUNT(*) FROM orders WHERE sale_id = s.id) + (SELECT COUNT(*) FROM failed_orders WHERE sale_id = s.id) AS landed,
              COALESCE(r.seq_offset, 0) AS seq_offset
       FROM sales s LEFT JOIN sale_recovery r ON r.sale_id = s.id
       WHERE s.ends_at > ?1 AND s.archived_at IS NULL AND s.state != 'cancelled'
         AND COALESCE(r.state, 'live') = 'live'
       ORDER BY s.id`,
    )
    .bind(now)
    .all<{ id: number; stock: number; sold: number; landed: number; seq_offset: number }>();
  return results.map((r) => ({ saleId: String(r.id), stock: r.stock, sold: r.sold, landed: r.landed, seqOffset: r.seq_offset }));
}

/** Orders of the sale that ended `failed` because Redis had sold what D1 could not record. */
export async function failedByRollback(db: D1Database, saleId: string): Promise<number> {
  const row = await db
    .prepare("SELECT COUNT(*) AS n FROM failed_orders WHERE sale_id = ? AND reason = ?")
    .bind(Number(saleId), REDIS_ROLLBACK)
    .first<{ n: number }>();
  return row?.n ?? 0;
}
