// D1's record of a sale's draw (migrations/0016_draws.sql, 0024_lane_draws.sql): where its run
// stands, the entries it committed, the Merkle tree's chunks, and the winners and offers.
import type { DrawResult } from "../shared/draw-proof";

export type DrawPhase = "collect" | "tree" | "beacon" | "shuffle" | "select" | "drawn";

/** A draw's run as D1 records it. */
export interface DrawRun {
  saleId: string;
  phase: DrawPhase;
  bucket: number;
  cursor: string;
  chunks: number;
  entries: number;
  entriesRoot: string | null;
  committedAt: number | null;
  beaconRandomness: string | null;
  selection: string | null;
  drawnAt: number | null;
  updatedAt: number;
}

interface RunRow {
  sale_id: number;
  phase: DrawPhase;
  bucket: number;
  cursor: string;
  chunks: number;
  entries: number;
  entries_root: string | null;
  committed_at: number | null;
  beacon_randomness: string | null;
  selection: string | null;
  drawn_at: number | null;
  updated_at: number;
}

const fromRun = (r: RunRow): DrawRun => ({
  saleId: String(r.sale_id),
  phase: r.phase,
  bucket: r.bucket,
  cursor: r.cursor,
  chunks: r.chunks,
  entries: r.entries,
  entriesRoot: r.entries_root,
  committedAt: r.committed_at,
  beaconRandomness: r.beacon_randomness,
  selection: r.selection,
  drawnAt: r.drawn_at,
  updatedAt: r.updated_at,
});

export async function findDrawRun(db: D1Database, saleId: string): Promise<DrawRun | undefined> {
  const row = await db.prepare("SELECT * FROM draw_runs WHERE sale_id = ?").bind(Number(saleId)).first<RunRow>();
  return row ? fromRun(row) : undefined;
}

/** Starts the sale's run (once: a second start changes nothing) and answers it. */
export async function startDrawRun(db: D1Database, saleId: string): Promise<DrawRun> {
  const [, read] = await db.batch<RunRow>([
    db
      .prepare("INSERT INTO draw_runs (sale_id, phase, updated_at) VALUES (?1, 'collect', ?2) ON CONFLICT DO NOTHING")
      .bind(Number(saleId), Date.now()),
    db.prepare("SELECT * FROM draw_runs WHERE sale_id = ?").bind(Number(saleId)),
  ]);
  return fromRun(read?.results[0] as RunRow);
}

/** The run's fields a step moves on, written in the same batch as the step's results. */
export type RunChange = Partial<Omit<DrawRun, "saleId" | "updatedAt">>;

const RUN_COLUMNS: Record<keyof RunChange, string> = {
  phase: "phase",
  bucket: "bucket",
  cursor: "cursor",
  chunks: "chunks",
  entries: "entries",
  entriesRoot: "entries_root",
  committedAt: "committed_at",
  beaconRandomness: "beacon_randomness",
  selection: "selection",
  drawnAt: "drawn_at",
};

/** Where a run stands, as its row says it (RUN_AT) and as a step read it (runAt). */
const RUN_AT = "phase || ':' || bucket || ':' || cursor";
const runAt = (run: DrawRun) => `${run.phase}:${run.bucket}:${run.cursor}`;

/**
 * The statement that moves the run on, only from the phase and cursor the step read: a step
 * run twice at once writes its results twice (each write is idempotent) but moves the run once.
 */
export function moveRun(db: D1Database, run: DrawRun, change: RunChange): D1PreparedStatement {
  const fields = Object.entries(change) as [keyof RunChange, unknown][];
  const sets = fields.map(([field], i) => `${RUN_COLUMNS[field]} = ?${i + 4}`).join(", ");
  return db
    .prepare(`UPDATE draw_runs SET ${sets}, updated_at = ?3 WHERE sale_id = ?1 AND ${RUN_AT} = ?2`)
    .bind(Number(run.saleId), runAt(run), Date.now(), ...fields.map(([, v]) => v ?? null));
}

/** An entry as the run commits it. */
export interface CommittedEntry {
  leafHash: string;
  entrant: string;
  userId: string;
  receipt: string;
  variant: string;
  quantity: number;
  enteredAt: number;
  /** The presale lane whose draw the entry is in ("" the public draw), its tier (tierOf), the code it entered with. */
  lane: string;
  tier: number;
  codeHash: string | null;
}

/** Inserts a page of entries (one statement; an entry inserted before stays as it is). */
export const insertEntries = (db: D1Database, saleId: string, entries: CommittedEntry[]): D1PreparedStatement =>
  db
    .prepare(
      `INSERT INTO draw_entries (sale_id, leaf_hash, entrant, user_id, receipt, variant, quantity, entered_at, lane, tier, code_hash)
       SELECT ?1, value ->> '$.leafHash', value ->> '$.entrant', value ->> '$.userId', value ->> '$.receipt',
              value ->> '$.variant', value ->> '$.quantity', value ->> '$.enteredAt', value ->> '$.lane', value ->> '$.tier',
              value ->> '$.codeHash'
       FROM json_each(?2) WHERE true
       ON CONFLICT DO NOTHING`,
    )
    .bind(Number(saleId), JSON.stringify(entries));

/** A leaf as the tree and the public list hold it, with what the draw made of it (null: not selected, or not drawn yet). */
export interface CommittedLeaf {
  leafHash: string;
  entrant: string;
  variant: string;
  quantity: number;
  lane: string;
  result: Exclude<DrawResult, "not_selected"> | null;
}

async function leavesBeyond(db: D1Database, saleId: string, op: ">" | ">=", leaf: string, limit: number) {
  const { results } = await db
    .prepare(
      `SELECT leaf_hash AS leafHash, entrant, variant, quantity, lane, result FROM draw_entries
       WHERE sale_id = ?1 AND leaf_hash ${op} ?2 ORDER BY leaf_hash LIMIT ?3`,
    )
    .bind(Number(saleId), leaf, limit)
    .all<CommittedLeaf>();
  return results;
}

/** The next `limit` leaves in tree order after `afterLeafHash` ("" for the first). */
export const leavesAfter = (db: D1Database, saleId: string, afterLeafHash: string, limit: number) =>
  leavesBeyond(db, saleId, ">", afterLeafHash, limit);

/** `limit` leaves in tree order from `fromLeafHash` on (a chunk, from its first leaf). */
export const leavesFrom = (db: D1Database, saleId: string, fromLeafHash: string, limit: number) =>
  leavesBeyond(db, saleId, ">=", fromLeafHash, limit);

/** A chunk of the tree: where it starts, how many leaves, its root. */
export interface TreeChunk {
  chunk: number;
  firstLeaf: string;
  leaves: number;
  root: string;
}

export const insertChunk = (db: D1Database, saleId: string, chunk: TreeChunk): D1PreparedStatement =>
  db
    .prepare(
      "INSERT INTO draw_chunks (sale_id, chunk, first_leaf, leaves, root) VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
    )
    .bind(Number(saleId), chunk.chunk, chunk.firstLeaf, chunk.leaves, chunk.root);

/** Chunk `chunk` of the tree, or undefined past its last. */
export async function treeChunk(db: D1Database, saleId: string, chunk: number): Promise<TreeChunk | undefined> {
  const row = await db
    .prepare("SELECT chunk, first_leaf AS firstLeaf, leaves, root FROM draw_chunks WHERE sale_id = ?1 AND chunk = ?2")
    .bind(Number(saleId), chunk)
    .first<TreeChunk>();
  return row ?? undefined;
}

export async function treeChunks(db: D1Database, saleId: string): Promise<TreeChunk[]> {
  const { results } = await db
    .prepare("SELECT chunk, first_leaf AS firstLeaf, leaves, root FROM draw_chunks WHERE sale_id = ? ORDER BY chunk")
    .bind(Number(saleId))
    .all<TreeChunk>();
  return results;
}

/**
 * One statement that updates a page of entries, each found by its leaf hash: `set` assigns
 * from `p.value`, the page's element (`?2`, JSON), `where` narrows further. Each element finds
 * its row by rowid through the primary key: written as a plain join (`draw_entries.leaf_hash =
 * p.value ->> '$.leafHash'`), SQLite's planner, with no statistics, walked every entry of the
 * sale for each element, a million rows read per element at a million entries.
 */
const updatePage = (db: D1Database, saleId: string, set: string, page: { leafHash: string }[], where = "") =>
  db
    .prepare(
      `UPDATE draw_entries SET ${set} FROM json_each(?2) AS p
       WHERE draw_entries.rowid = (SELECT e.rowid FROM draw_entries e WHERE e.sale_id = ?1 AND e.leaf_hash = p.value ->> '$.leafHash')${where}`,
    )
    .bind(Number(saleId), JSON.stringify(page));

/** Writes a page's shuffle keys (one statement). */
export const setShuffleKeys = (db: D1Database, saleId: string, keys: { leafHash: string; shuffleKey: string }[]) =>
  updatePage(db, saleId, "shuffle_key = p.value ->> '$.shuffleKey'", keys);

/** An entry in shuffle order, for the selection. */
export interface ShuffledEntry {
  leafHash: string;
  shuffleKey: string;
  variant: string;
  quantity: number;
  lane: string;
}

/** The next `limit` entries of draw `tier` in shuffle order after (shuffleKey, leafHash) ("" for the first). */
export async function shuffledAfter(
  db: D1Database,
  saleId: string,
  tier: number,
  after: string,
  limit: number,
): Promise<ShuffledEntry[]> {
  const [key = "", leaf = ""] = after.split(":");
  const { results } = await db
    .prepare(
      `SELECT leaf_hash AS leafHash, shuffle_key AS shuffleKey, variant, quantity, lane FROM draw_entries
       WHERE sale_id = ?1 AND tier = ?5 AND (shuffle_key > ?2 OR (shuffle_key = ?2 AND leaf_hash > ?3))
       ORDER BY shuffle_key, leaf_hash LIMIT ?4`,
    )
    .bind(Number(saleId), key, leaf, limit, tier)
    .all<ShuffledEntry>();
  return results;
}

/** Writes a page's results (one statement): selected and waitlisted entries; the others stay NULL, not selected. */
export const setResults = (
  db: D1Database,
  saleId: string,
  results: { leafHash: string; result: Exclude<DrawResult, "not_selected"> }[],
) => updatePage(db, saleId, "result = p.value ->> '$.result'", results);

/** The caller's committed entry, with what the draw made of it. */
export interface EntryRecord extends CommittedEntry {
  shuffleKey: string | null;
  result: Exclude<DrawResult, "not_selected"> | null;
  orderId: string | null;
}

export async function findEntry(db: D1Database, saleId: string, userId: string): Promise<EntryRecord | undefined> {
  const row = await db
    .prepare(
      `SELECT leaf_hash AS leafHash, entrant, user_id AS userId, receipt, variant, quantity, entered_at AS enteredAt,
              lane, tier, code_hash AS codeHash, shuffle_key AS shuffleKey, result, order_id AS orderId
       FROM draw_entries WHERE sale_id = ?1 AND user_id = ?2`,
    )
    .bind(Number(saleId), userId)
    .first<EntryRecord>();
  return row ?? undefined;
}

/** A variant's counts (draw_counts): its committed entries, and those selected and waitlisted. */
export interface VariantCounts {
  variant: string;
  entries: number;
  selected: number;
  waitlisted: number;
}

/**
 * Adds a step's counts to its variants' rows, only while the run stands where the step read it;
 * put before moveRun in the step's batch, a step done twice adds once, as it moves the run once.
 */
export const addCounts = (db: D1Database, run: DrawRun, counts: VariantCounts[]): D1PreparedStatement =>
  db
    .prepare(
      `INSERT INTO draw_counts (sale_id, variant, entries, selected, waitlisted)
       SELECT ?1, value ->> '$.variant', value ->> '$.entries', value ->> '$.selected', value ->> '$.waitlisted'
       FROM json_each(?3) WHERE EXISTS (SELECT 1 FROM draw_runs WHERE sale_id = ?1 AND ${RUN_AT} = ?2)
       ON CONFLICT (sale_id, variant) DO UPDATE SET entries = entries + excluded.entries,
         selected = selected + excluded.selected, waitlisted = waitlisted + excluded.waitlisted`,
    )
    .bind(Number(run.saleId), runAt(run), JSON.stringify(counts));

/**
 * The counts of the sale's `variants` variants, a row each (none for a variant without committed
 * entries). The LIMIT spares D1 the read of the next sale's first row, which ends the range.
 */
export async function drawCounts(db: D1Database, saleId: string, variants: number): Promise<VariantCounts[]> {
  const { results } = await db
    .prepare("SELECT variant, entries, selected, waitlisted FROM draw_counts WHERE sale_id = ?1 LIMIT ?2")
    .bind(Number(saleId), variants)
    .all<VariantCounts>();
  return results;
}

/** An entry to offer units to: a selected one not offered yet, or a waitlisted one, in draw and shuffle order. */
export interface OfferCandidate {
  leafHash: string;
  userId: string;
  variant: string;
  quantity: number;
  result: Exclude<DrawResult, "not_selected">;
  /** The access code a lane's entry entered with, which its offer spends (null: a public entry). */
  codeHash: string | null;
}

/**
 * Entries of `result` not offered an order yet, of the draws up to `tier` (the lanes' open by
 * now, the public one from the sale's start: tierOf), in draw and shuffle order, at most
 * `limit`. Through the results' index, named: left to itself the planner walked the whole
 * shuffle (every entry of the sale) for its order, to find a few hundred winners among a million.
 */
export async function unoffered(
  db: D1Database,
  saleId: string,
  result: Exclude<DrawResult, "not_selected">,
  tier: number,
  limit: number,
): Promise<OfferCandidate[]> {
  const { results } = await db
    .prepare(
      `SELECT leaf_hash AS leafHash, user_id AS userId, variant, quantity, result, code_hash AS codeHash
       FROM draw_entries INDEXED BY draw_entries_offers
       WHERE sale_id = ?1 AND result = ?2 AND tier <= ?4 AND order_id IS NULL ORDER BY tier, shuffle_key, leaf_hash LIMIT ?3`,
    )
    .bind(Number(saleId), result, limit, tier)
    .all<OfferCandidate>();
  return results;
}

/** Records the orders offered (an entry offered before keeps its first order). */
export const recordOffers = (db: D1Database, saleId: string, offers: { leafHash: string; orderId: string }[]) =>
  updatePage(db, saleId, "order_id = p.value ->> '$.orderId'", offers, " AND draw_entries.order_id IS NULL").run();
