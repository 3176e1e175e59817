// D1's record of a random sale's published pre-queue (migrations/0021_queue_draws.sql): where
// its run stands, and its pages of places.

export type QueueDrawPhase = "count" | "pages" | "ready";

/** A publication's run as D1 records it. */
export interface QueueDrawRun {
  saleId: string;
  phase: QueueDrawPhase;
  /** Places a page holds: a power of two, so the pages are the tree's aligned chunks. */
  pageLeaves: number;
  /** Each bucket's size of the pre-queue as counted (from the pages on). */
  sizes: number[] | null;
  drawn: number;
  /** Pages written. */
  pages: number;
  placesRoot: string | null;
  publishedAt: number | null;
  updatedAt: number;
}

interface RunRow {
  sale_id: number;
  phase: QueueDrawPhase;
  page_leaves: number;
  sizes: string | null;
  drawn: number;
  pages: number;
  places_root: string | null;
  published_at: number | null;
  updated_at: number;
}

const fromRow = (r: RunRow): QueueDrawRun => ({
  saleId: String(r.sale_id),
  phase: r.phase,
  pageLeaves: r.page_leaves,
  sizes: r.sizes === null ? null : (JSON.parse(r.sizes) as number[]),
  drawn: r.drawn,
  pages: r.pages,
  placesRoot: r.places_root,
  publishedAt: r.published_at,
  updatedAt: r.updated_at,
});

const SELECT_RUN = "SELECT * FROM queue_draw_runs WHERE sale_id = ?";

export async function findQueueDrawRun(db: D1Database, saleId: string): Promise<QueueDrawRun | undefined> {
  const row = await db.prepare(SELECT_RUN).bind(Number(saleId)).first<RunRow>();
  return row ? fromRow(row) : undefined;
}

/**
 * Starts the sale's run (once: a second start changes nothing), unless its Redis keys are
 * being archived (an archive row: the pre-queue may be half removed). Answers the run, and
 * whether this call started it; undefined when it cannot start.
 */
export async function startQueueDrawRun(
  db: D1Database,
  saleId: string,
  pageLeaves: number,
): Promise<{ run: QueueDrawRun; started: boolean } | undefined> {
  const [insert, read] = await db.batch<RunRow>([
    db
      .prepare(
        `INSERT INTO queue_draw_runs (sale_id, phase, page_leaves, updated_at)
         SELECT ?1, 'count', ?2, ?3 WHERE NOT EXISTS (SELECT 1 FROM sale_archives WHERE sale_id = ?1)
         ON CONFLICT DO NOTHING`,
      )
      .bind(Number(saleId), pageLeaves, Date.now()),
    db.prepare(SELECT_RUN).bind(Number(saleId)),
  ]);
  const row = read?.results[0];
  return row && { run: fromRow(row), started: (insert?.meta.changes ?? 0) > 0 };
}

/** The run's fields a step moves on, written in the same batch as the step's page. */
export type QueueDrawChange = Partial<Pick<QueueDrawRun, "phase" | "sizes" | "drawn" | "pages" | "placesRoot" | "publishedAt">>;

const COLUMNS: Record<keyof QueueDrawChange, string> = {
  phase: "phase",
  sizes: "sizes",
  drawn: "drawn",
  pages: "pages",
  placesRoot: "places_root",
  publishedAt: "published_at",
};

/**
 * The statement that moves the run on, only from the phase and page the step read: a step run
 * twice at once writes its page twice (the second write changes nothing) but moves the run once.
 */
export function moveQueueDrawRun(db: D1Database, run: QueueDrawRun, change: QueueDrawChange): D1PreparedStatement {
  const fields = Object.entries(change) as [keyof QueueDrawChange, unknown][];
  const sets = fields.map(([field], i) => `${COLUMNS[field]} = ?${i + 5}`).join(", ");
  const value = (v: unknown) => (Array.isArray(v) ? JSON.stringify(v) : (v ?? null));
  return db
    .prepare(`UPDATE queue_draw_runs SET ${sets}, updated_at = ?4 WHERE sale_id = ?1 AND phase = ?2 AND pages = ?3`)
    .bind(Number(run.saleId), run.phase, run.pages, Date.now(), ...fields.map(([, v]) => value(v)));
}

/** A page of places: each one's draw key in place order, and the page's root. */
export interface PlacesPage {
  page: number;
  drawKeys: string[];
  root: string;
}

/** Draw keys are kept one after another, each 64 hex characters. */
const KEY_CHARS = 64;

export const insertPlacesPage = (db: D1Database, saleId: string, page: PlacesPage): D1PreparedStatement =>
  db
    .prepare("INSERT INTO queue_draw_pages (sale_id, page, draw_keys, root) VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING")
    .bind(Number(saleId), page.page, page.drawKeys.join(""), page.root);

/** Every page of the sale's (a publication started again). */
export const deleteQueueDrawPages = (db: D1Database, saleId: string): D1PreparedStatement =>
  db.prepare("DELETE FROM queue_draw_pages WHERE sale_id = ?").bind(Number(saleId));

export async function findPlacesPage(db: D1Database, saleId: string, page: number): Promise<PlacesPage | undefined> {
  const row = await db
    .prepare("SELECT draw_keys, root FROM queue_draw_pages WHERE sale_id = ?1 AND page = ?2")
    .bind(Number(saleId), page)
    .first<{ draw_keys: string; root: string }>();
  if (!row) return undefined;
  const drawKeys = Array.from({ length: row.draw_keys.length / KEY_CHARS }, (_, i) =>
    row.draw_keys.slice(i * KEY_CHARS, (i + 1) * KEY_CHARS),
  );
  return { page, drawKeys, root: row.root };
}

/** Every page's root, in page order. */
export async function placesPageRoots(db: D1Database, saleId: string): Promise<string[]> {
  const { results } = await db
    .prepare("SELECT root FROM queue_draw_pages WHERE sale_id = ? ORDER BY page")
    .bind(Number(saleId))
    .all<{ root: string }>();
  return results.map((r) => r.root);
}
