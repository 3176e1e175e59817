// A sale's draw, run in bounded steps (docs/draws.md): seal the entries (lua/draw-seal.lua),
// collect them from Redis into D1 a page at a time, build the Merkle tree a chunk at a time
// and publish its root, wait for the beacon's round, key every entry's place in the shuffle,
// and walk the shuffle choosing the winners (each presale lane's draw first, in start order,
// then the public one: docs/lanes.md); the tree and the selection keep each variant's
// counts as they go (what the public view shows, read without counting the list). Each step
// reads where the run stands in D1 and writes its results and the run's next position in one
// batch: a step cut short (a crash, a lost message) is done again from the same position, to
// the same result, however the steps fall. No step reads more than a page, so a million
// entries cost many small steps, never one long script or query. The jobs queue runs the
// steps; the cron restarts a run that stalled.
import { hashRecord, type Redis } from "../redis/client";
import { LUA, runScript } from "../redis/scripts";
import type { Sale } from "../sales/sale";
import {
  auditPath,
  type DrawLane,
  drawKeyOf,
  entrantHash,
  leafHash,
  Selection,
  shuffler,
  tierOf,
  treeHash,
} from "../shared/draw-proof";
import { hexBytes, toHex } from "../shared/hex";
import { allBuckets, saleKeys } from "../shared/keys";
import { DRAW_CHUNK_LEAVES, DRAW_PAGE } from "../shared/limits";
import { log } from "../shared/log";
import type { JobMessage } from "../shared/messages";
import {
  addCounts,
  type CommittedEntry,
  type DrawRun,
  findDrawRun,
  insertChunk,
  insertEntries,
  leavesAfter,
  leavesFrom,
  moveRun,
  setResults,
  setShuffleKeys,
  shuffledAfter,
  startDrawRun,
  treeChunks,
  type VariantCounts,
} from "./draw-records";
import { parseEntry } from "./draws";

/** What a draw's steps need. */
export interface DrawDeps {
  db: D1Database;
  redis: Redis;
  /** How the beacon's round is fetched (the Worker's own fetch). */
  fetch: typeof fetch;
}

/** What the run needs next: another step now, a wait (ms), or nothing (drawn). */
export type StepOutcome = { next: "step" } | { next: "wait"; ms: number } | { next: "done" };

/** The variants' stock, as the selection spends it. */
const stockOf = (sale: Sale) =>
  new Map(sale.variants.length > 0 ? sale.variants.map((v) => [v.id, v.stock]) : [["default", sale.stock]]);

/** The sale's presale lanes, as the selection spends their allotments. */
const lanesOf = (sale: Sale): DrawLane[] => sale.lanes.map(({ name, stock, variants }) => ({ name, stock, variants }));

/** The beacon round's randomness (hex), or undefined while the round is not out yet. */
async function beaconRandomness(deps: DrawDeps, beacon: { url: string; round: number }): Promise<string | undefined> {
  // Called on its own, not as deps.fetch(): workerd's fetch throws "Illegal invocation" when
  // called on any other object (the Worker tests' fetch does not, so only a deployed draw would hang).
  const { fetch: get } = deps;
  const res = await get(`${beacon.url.replace(/\/+$/, "")}/public/${beacon.round}`, {
    signal: AbortSignal.timeout(5_000),
  });
  if (!res.ok) {
    await res.body?.cancel();
    return undefined;
  }
  const { randomness } = (await res.json()) as { randomness?: unknown };
  return typeof randomness === "string" && /^[0-9a-f]{64}$/.test(randomness) ? randomness : undefined;
}

/** Collect: one page of one bucket's entries (those standing, not quiet) into D1. */
async function collect(deps: DrawDeps, sale: Sale, run: DrawRun): Promise<StepOutcome> {
  const buckets = allBuckets(sale.id, sale.buckets);
  const bucket = buckets[run.bucket];
  if (!bucket) {
    await moveRun(deps.db, run, { phase: "tree", bucket: 0, cursor: "" }).run();
    return { next: "step" };
  }
  const [cursor, fields] = (await deps.redis.hscan(bucket.entries, run.cursor || "0", { count: DRAW_PAGE })) as unknown as [
    string,
    string[],
  ];
  const page: CommittedEntry[] = [];
  for (const [userId, record] of Object.entries(hashRecord(fields))) {
    const entry = parseEntry(record);
    if (entry?.state !== "e") continue;
    const entrant = await entrantHash(userId, entry.receipt);
    // A sale with lanes names each leaf's draw in it; a sale without keeps the leaf as it always was.
    const leaf = {
      entrant,
      variant: entry.variant,
      quantity: entry.quantity,
      ...(sale.lanes.length > 0 && { lane: entry.lane }),
    };
    page.push({
      leafHash: await leafHash(leaf),
      ...leaf,
      lane: entry.lane,
      tier: tierOf(sale.lanes, entry.lane),
      codeHash: entry.codeHash ?? null,
      userId,
      receipt: entry.receipt,
      enteredAt: entry.enteredAt,
    });
  }
  const done = String(cursor) === "0";
  await deps.db.batch([
    ...(page.length > 0 ? [insertEntries(deps.db, sale.id, page)] : []),
    moveRun(deps.db, run, done ? { bucket: run.bucket + 1, cursor: "" } : { cursor: String(cursor) }),
  ]);
  return { next: "step" };
}

/** What a step adds to the counts per variant (draw_counts): one to the `count` of each leaf's variant. */
function countsOf(leaves: { variant: string; count: Exclude<keyof VariantCounts, "variant"> }[]): VariantCounts[] {
  const byVariant = new Map<string, VariantCounts>();
  for (const { variant, count } of leaves) {
    const counts = byVariant.get(variant) ?? { variant, entries: 0, selected: 0, waitlisted: 0 };
    counts[count]++;
    byVariant.set(variant, counts);
  }
  return [...byVariant.values()];
}

/**
 * Tree: one chunk's root, its entries added to the counts per variant; after the last, the
 * tree's root and its size, published (the commitment).
 */
async function tree(deps: DrawDeps, sale: Sale, run: DrawRun): Promise<StepOutcome> {
  const leaves = await leavesAfter(deps.db, sale.id, run.cursor, DRAW_CHUNK_LEAVES);
  if (leaves.length > 0) {
    const root = toHex(await treeHash(leaves.map((l) => hexBytes(l.leafHash))));
    const last = (leaves.at(-1) as { leafHash: string }).leafHash;
    const chunk = { chunk: run.chunks, firstLeaf: (leaves[0] as { leafHash: string }).leafHash, leaves: leaves.length, root };
    await deps.db.batch([
      insertChunk(deps.db, sale.id, chunk),
      addCounts(deps.db, run, countsOf(leaves.map((l) => ({ variant: l.variant, count: "entries" })))),
      moveRun(deps.db, run, { cursor: last, chunks: run.chunks + 1 }),
    ]);
    if (leaves.length === DRAW_CHUNK_LEAVES) return { next: "step" };
    run = { ...run, cursor: last, chunks: run.chunks + 1 };
  }
  const chunks = await treeChunks(deps.db, sale.id);
  const entriesRoot = toHex(await treeHash(chunks.map((c) => hexBytes(c.root))));
  const entries = chunks.reduce((n, c) => n + c.leaves, 0);
  await moveRun(deps.db, run, { phase: "beacon", cursor: "", entries, entriesRoot, committedAt: Date.now() }).run();
  log.info("draw: entries committed", { saleId: sale.id, entries, entriesRoot });
  return { next: "step" };
}

/** How long to wait before asking the beacon again. */
const BEACON_RETRY_MS = 2_000;

/** Beacon: its round's randomness once out (none for a draw without a beacon). */
async function beacon(deps: DrawDeps, sale: Sale, run: DrawRun): Promise<StepOutcome> {
  const named = sale.draw?.beacon;
  const randomness = named ? await beaconRandomness(deps, named).catch(() => undefined) : null;
  if (randomness === undefined) return { next: "wait", ms: BEACON_RETRY_MS };
  await moveRun(deps.db, run, { phase: "shuffle", beaconRandomness: randomness }).run();
  return { next: "step" };
}

/** The draw key: the seed, revealed at the draw, with the beacon's value. */
function drawKey(sale: Sale, run: DrawRun): Promise<string> {
  if (!sale.queue.seed) throw new Error(`sale ${sale.id} has no seed to draw with`);
  return drawKeyOf(sale.queue.seed, run.beaconRandomness);
}

/** Shuffle: one page's shuffle keys. */
async function shuffle(deps: DrawDeps, sale: Sale, run: DrawRun): Promise<StepOutcome> {
  const leaves = await leavesAfter(deps.db, sale.id, run.cursor, DRAW_PAGE);
  if (leaves.length === 0) {
    const selection = JSON.stringify(new Selection(stockOf(sale), lanesOf(sale)).state);
    await moveRun(deps.db, run, { phase: "select", bucket: 0, cursor: "", selection }).run();
    return { next: "step" };
  }
  const keyOf = await shuffler(await drawKey(sale, run));
  const keys = await Promise.all(leaves.map(async (l) => ({ leafHash: l.leafHash, shuffleKey: await keyOf(l.leafHash) })));
  const last = (leaves.at(-1) as { leafHash: string }).leafHash;
  await deps.db.batch([setShuffleKeys(deps.db, sale.id, keys), moveRun(deps.db, run, { cursor: last })]);
  return { next: "step" };
}

/**
 * Select: one page of one draw's shuffle, in order (the run's `bucket` is the draw's tier: each
 * lane's in start order, then the public one); the selection's state carries to the next page,
 * the page's selected and waitlisted entries go to the counts per variant.
 */
async function select(deps: DrawDeps, sale: Sale, run: DrawRun): Promise<StepOutcome> {
  const page = await shuffledAfter(deps.db, sale.id, run.bucket, run.cursor, DRAW_PAGE);
  if (page.length === 0 && run.bucket < sale.lanes.length) {
    await moveRun(deps.db, run, { bucket: run.bucket + 1, cursor: "" }).run();
    return { next: "step" };
  }
  if (page.length === 0) {
    await moveRun(deps.db, run, { phase: "drawn", drawnAt: Date.now() }).run();
    log.info("draw: drawn", { saleId: sale.id, entries: run.entries });
    return { next: "done" };
  }
  const selection = Selection.resume(stockOf(sale), JSON.parse(run.selection ?? "{}"), lanesOf(sale));
  const results = page.flatMap((entry) => {
    const result = selection.next(entry);
    return result === "not_selected" ? [] : [{ leafHash: entry.leafHash, variant: entry.variant, result }];
  });
  const last = page.at(-1) as { leafHash: string; shuffleKey: string };
  await deps.db.batch([
    ...(results.length > 0
      ? [
          setResults(deps.db, sale.id, results),
          addCounts(deps.db, run, countsOf(results.map((r) => ({ variant: r.variant, count: r.result })))),
        ]
      : []),
    moveRun(deps.db, run, { cursor: `${last.shuffleKey}:${last.leafHash}`, selection: JSON.stringify(selection.state) }),
  ]);
  return { next: "step" };
}

const STEPS = { collect, tree, beacon, shuffle, select } as const;

/**
 * One step of the sale's draw (starting it, once its entries are sealed). "wait" while the
 * entries are still open by Redis' clock, or the beacon's round is not out.
 */
export async function drawStep(deps: DrawDeps, sale: Sale): Promise<StepOutcome> {
  let run = await findDrawRun(deps.db, sale.id);
  if (!run) {
    const keys = saleKeys(sale.id);
    const [sealed, , untilClose] = (await runScript<number[]>(deps.redis, LUA.drawSeal, [keys.meta, keys.draw], [])).map(Number);
    if (sealed !== 1) return untilClose === -1 ? { next: "done" } : { next: "wait", ms: Math.max(untilClose as number, 100) };
    run = await startDrawRun(deps.db, sale.id);
  }
  if (run.phase === "drawn") return { next: "done" };
  return STEPS[run.phase](deps, sale, run);
}

/** Steps one job runs at most before handing the rest to the next message. */
const STEPS_PER_JOB = 20;

/**
 * Runs `step` as far as one job may: step after step until the run is done, must wait, or has
 * taken its share of steps. Returns when to be run again (undefined: done).
 */
export async function runSteps(step: () => Promise<StepOutcome>): Promise<number | undefined> {
  for (let i = 0; i < STEPS_PER_JOB; i++) {
    const outcome = await step();
    if (outcome.next === "done") return undefined;
    if (outcome.next === "wait") return outcome.ms;
  }
  return 0;
}

/** Runs the sale's draw as far as one job may. Returns when to be run again (undefined: drawn). */
export const runDraw = (deps: DrawDeps, sale: Sale): Promise<number | undefined> => runSteps(() => drawStep(deps, sale));

/** An entry's audit path in the committed tree: its index and the hashes from it up to the root. */
export async function inclusionProof(
  db: D1Database,
  saleId: string,
  leaf: string,
): Promise<{ index: number; size: number; path: string[] } | undefined> {
  const chunks = await treeChunks(db, saleId);
  const at = chunks.findLastIndex((c) => c.firstLeaf <= leaf);
  const chunk = chunks[at];
  if (!chunk) return undefined;
  const leaves = await leavesFrom(db, saleId, chunk.firstLeaf, chunk.leaves);
  const position = leaves.findIndex((l) => l.leafHash === leaf);
  if (position < 0) return undefined;
  const within = await auditPath(
    position,
    leaves.map((l) => hexBytes(l.leafHash)),
  );
  const among = await auditPath(
    at,
    chunks.map((c) => hexBytes(c.root)),
  );
  return {
    index: at * DRAW_CHUNK_LEAVES + position,
    size: chunks.reduce((n, c) => n + c.leaves, 0),
    path: [...within, ...among],
  };
}

/** A run not moved for this long stalled (its message was lost): the cron starts it again. */
export const STALLED_MS = 30_000;

/**
 * The cron's part (every minute, the backstop of the jobs queue): draws whose entries closed
 * and that are not drawn (none started, or one that stalled) are sent a step; drawn sales
 * within their window (from their first lane's start) are sent an offer (winners not offered yet, units that came back).
 * Returns the sales it sent each.
 */
export async function superviseDraws(
  db: D1Database,
  jobs: Queue<JobMessage>,
  now = Date.now(),
): Promise<{ stepped: string[]; offered: string[] }> {
  const { results } = await db
    .prepare(
      `SELECT s.id, r.phase, r.updated_at, s.opens_at, s.ends_at FROM sales s LEFT JOIN draw_runs r ON r.sale_id = s.id
       WHERE s.draw_closes_at IS NOT NULL AND s.draw_closes_at <= ?1 AND s.state != 'cancelled' AND s.archived_at IS NULL
         AND (r.phase IS NULL OR r.phase != 'drawn' OR s.ends_at > ?1)`,
    )
    .bind(now)
    .all<{ id: number; phase: string | null; updated_at: number | null; opens_at: number; ends_at: number }>();
  const stepped: string[] = [];
  const offered: string[] = [];
  for (const row of results) {
    const saleId = String(row.id);
    if (row.phase !== "drawn" && (row.updated_at === null || now - row.updated_at > STALLED_MS)) stepped.push(saleId);
    if (row.phase === "drawn" && row.opens_at <= now && now < row.ends_at) offered.push(saleId);
  }
  const messages = [
    ...stepped.map((saleId) => ({ body: { kind: "draw-step", saleId } as const, contentType: "json" as const })),
    ...offered.map((saleId) => ({ body: { kind: "draw-offer", saleId } as const, contentType: "json" as const })),
  ];
  for (let i = 0; i < messages.length; i += 100) await jobs.sendBatch(messages.slice(i, i + 100));
  return { stepped, offered };
}
