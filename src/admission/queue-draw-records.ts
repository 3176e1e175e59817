// D1's record of a random sale's published pre-queue (migrations/0021_queue_draws.sql): where
// each line's run stands, and its pages of places.
import type { Line } from "../shared/keys";

export type QueueDrawPhase = "count" | "pages" | "ready";

/** A line's publication run as D1 records it. */
export interface QueueDrawRun {
  saleId: string;
  /** The public line (""), or the presale lane whose own line it is. */
  line: Line;
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
  line: string;
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
  line: r.line,
  phase: r.phase,
  pageLeaves: r.page_leaves,
  sizes: r.sizes === null ? null : (JSON.parse(r.sizes) as number[]),
  drawn: r.drawn,
  pages: r.pages,
  placesRoot: r.places_root,
  publishedAt: r.published_at,
  updatedAt: r.updated_at,
});

const SELECT_RUNS = "SELECT * FROM queue_draw_runs WHERE sale_id = ? ORDER BY line";

/** The runs of every line of the sale's, the public line's first (none: not started). */
export async function findQueueDrawRuns(db: D1Database, saleId: string): Promise<QueueDrawRun[]> {
  const { results } = await db.prepare(SELECT_RUNS).bind(Number(saleId)).all<RunRow>();
  return results.map(fromRow);
}

/**
 * Starts the runs of the sale's lines, all in one batch (once: a second start changes nothing),
 * unless its Redis keys are being archived (an archive row: the pre-queue may be half removed).
 * Answers the runs, and whether this call started them; none when they cannot start.
 */
export async function startQueueDrawRuns(
  db: D1Database,
  saleId: string,
  lines: readonly Line[],
  pageLeaves: number,
): Promise<{ runs: QueueDrawRun[]; started: boolean }> {
  const inserts = lines.map((line) =>
    db
      .prepare(
        `INSERT INTO queue_draw_runs (sale_id, line, phase, page_leaves, updated_at)
         SELECT ?1, ?2, 'count', ?3, ?4 WHERE NOT EXISTS (SELECT 1 FROM sale_archives WHERE sale_id = ?1)
         ON CONFLICT DO NOTHING`,
      )
      .bind(Number(saleId), line, pageLeaves, Date.now()),
  );
  const results = await db.batch<RunRow>([...inserts, db.prepare(SELECT_RUNS).bind(Number(saleId))]);
  const read = results.at(-1);
  return {
    runs: (read?.results ?? []).map(fromRow),
    started: results.slice(0, -1).some((insert) => (insert.meta.changes ?? 0) > 0),
  };
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
  const sets = fields.map(([field], i) => `${COLUMNS[field]} = ?${i + 6}`).join(", ");
  const value = (v: unknown) => (Array.isArray(v) ? JSON.stringify(v) : (v ?? null));
  return db
    .prepare(`UPDATE queue_draw_runs SET ${sets}, updated_at = ?5 WHERE sale_id = ?1 AND line = ?2 AND phase = ?3 AND pages = ?4`)
    .bind(Number(run.saleId), run.line, run.phase, run.pages, Date.now(), ...fields.map(([, v]) => value(v)));
}

/** A page of places: each one's draw key in place order, and the page's root. */
export interface PlacesPage {
  page: number;
  drawKeys: string[];
  root: string;
}

/** Draw keys are kept one after another, each 64 hex characters. */
const KEY_CHARS = 64;

export const insertPlacesPage = (db: D1Database, run: QueueDrawRun, page: PlacesPage): D1PreparedStatement =>
  db
    .prepare(
      "INSERT INTO queue_draw_pages (sale_id, line, page, draw_keys, root) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
    )
    .bind(Number(run.saleId), run.line, page.page, page.drawKeys.join(""), page.root);

/** Every page of the run's line (a publication started again). */
export const deleteQueueDrawPages = (db: D1Database, run: QueueDrawRun): D1PreparedStatement =>
  db.prepare("DELETE FROM queue_draw_pages WHERE sale_id = ? AND line = ?").bind(Number(run.saleId), run.line);

export async function findPlacesPage(db: D1Database, run: QueueDrawRun, page: number): Promise<PlacesPage | undefined> {
  const row = await db
    .prepare("SELECT draw_keys, root FROM queue_draw_pages WHERE sale_id = ?1 AND line = ?2 AND page = ?3")
    .bind(Number(run.saleId), run.line, page)
    .first<{ draw_keys: string; root: string }>();
  if (!row) return undefined;
  const drawKeys = Array.from({ length: row.draw_keys.length / KEY_CHARS }, (_, i) =>
    row.draw_keys.slice(i * KEY_CHARS, (i + 1) * KEY_CHARS),
  );
  return { page, drawKeys, root: row.root };
}

/** Every page's root of the run's line, in page order. */
export async function placesPageRoots(db: D1Database, run: QueueDrawRun): Promise<string[]> {
  const { results } = await db
    .prepare("SELECT root FROM queue_draw_pages WHERE sale_id = ? AND line = ? ORDER BY page")
    .bind(Number(run.saleId), run.line)
    .all<{ root: string }>();
  return results.map((r) => r.root);
}
