// A sale's Redis figures kept in D1 (sale_archives, migrations/0005_catalog.sql) once the
// sale has ended and settled, so its Redis keys can go: the reconciliation report reads
// them from here afterwards. sales.archived_at marks the end: every key is gone.

/** What the reconciliation report reads from Redis, as it stood when the sale was archived. */
export interface SaleArchive {
  remaining: number;
  /** Each variant's remaining, for a sale with variants (empty otherwise). */
  remainingByVariant: Record<string, number>;
  /** Order ids minted over the sale. */
  minted: number;
  /** Buyers holding units (the buyers hash's length). */
  buyers: number;
  /** Orders whose units went back on sale. */
  returned: number;
  /** When these figures were taken, epoch ms. */
  archivedAt: number;
}

interface ArchiveRow {
  remaining: number;
  remaining_by_variant: string | null;
  minted: number;
  buyers: number;
  returned: number;
  archived_at: number;
}

const fromRow = (row: ArchiveRow): SaleArchive => ({
  remaining: row.remaining,
  remainingByVariant: row.remaining_by_variant === null ? {} : (JSON.parse(row.remaining_by_variant) as Record<string, number>),
  minted: row.minted,
  buyers: row.buyers,
  returned: row.returned,
  archivedAt: row.archived_at,
});

const SELECT_ARCHIVE =
  "SELECT remaining, remaining_by_variant, minted, buyers, returned, archived_at FROM sale_archives WHERE sale_id = ?";

export async function findSaleArchive(db: D1Database, saleId: string): Promise<SaleArchive | undefined> {
  const row = await db.prepare(SELECT_ARCHIVE).bind(Number(saleId)).first<ArchiveRow>();
  return row ? fromRow(row) : undefined;
}

/**
 * Records the figures once: a run that crashed after recording them and comes back keeps
 * the first ones (taken while Redis still held everything), never figures read from keys
 * half removed. Returns the figures as recorded.
 */
export async function recordSaleArchive(
  db: D1Database,
  saleId: string,
  figures: Omit<SaleArchive, "archivedAt">,
  now = Date.now(),
): Promise<SaleArchive> {
  const [, stored] = await db.batch<ArchiveRow>([
    db
      .prepare(
        `INSERT INTO sale_archives (sale_id, remaining, minted, buyers, returned, archived_at, remaining_by_variant)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (sale_id) DO NOTHING`,
      )
      .bind(
        Number(saleId),
        figures.remaining,
        figures.minted,
        figures.buyers,
        figures.returned,
        now,
        Object.keys(figures.remainingByVariant).length > 0 ? JSON.stringify(figures.remainingByVariant) : null,
      ),
    db.prepare(SELECT_ARCHIVE).bind(Number(saleId)),
  ]);
  const row = stored?.results[0];
  if (!row) throw new Error(`sale ${saleId}: the archive row was not recorded`);
  return fromRow(row);
}

/** Every Redis key of the sale is gone: readers go to D1 alone from now on. */
export async function markSaleArchived(db: D1Database, saleId: string, now = Date.now()): Promise<void> {
  await db.prepare("UPDATE sales SET archived_at = ?2 WHERE id = ?1 AND archived_at IS NULL").bind(Number(saleId), now).run();
}

/**
 * Sales that ended at or before `endedBy` and are not archived yet, at most `limit`
 * (restricted to `among` when given): those whose archiving began first (they hold a
 * sale_archives row: a run ran out of budget or crashed midway), then the others in random
 * order, so a few sales that can never be archived (unsettled work for an operator) do not
 * hold back all the others.
 */
export async function saleIdsToArchive(db: D1Database, endedBy: number, limit: number, among?: string[]): Promise<string[]> {
  const { results } = await db
    .prepare(
      `SELECT s.id FROM sales s LEFT JOIN sale_archives a ON a.sale_id = s.id
       WHERE s.ends_at <= ?1 AND s.archived_at IS NULL
         AND (?3 IS NULL OR s.id IN (SELECT value FROM json_each(?3)))
       ORDER BY a.sale_id IS NULL, RANDOM() LIMIT ?2`,
    )
    .bind(endedBy, limit, among ? JSON.stringify(among.map(Number)) : null)
    .all<{ id: number }>();
  return results.map((r) => String(r.id));
}
