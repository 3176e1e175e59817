// A random sale's pre-queue, published once the sale is over (docs/api.md, "Verifying a
// draw"): every place with its holder's draw key, no user ids, and the RFC 6962 root over them,
// for each line of its waiting room (the public line, and each presale lane's own), built in
// bounded steps as a draw's tree is (src/admission/draw-run.ts), one line after another. The
// lines' runs start together, in one D1 batch. A line's first step counts
// each bucket's range of the pre-queue, which stopped growing at the start by Redis' clock; each
// later step reads one page of places from Redis (a ZRANGE of the buckets it spans), hashes it,
// and writes it with the run's next position in one batch, so a step cut short is done again to
// the same page, however the steps fall; the last publishes the root over the pages' roots. No
// step reads more than a page, so a million joiners cost many small steps, never one long
// request. The jobs queue runs the steps; the first read of the publication or the cron starts
// the run, and the cron restarts one that stalled.
import { hashFields, type Redis } from "../redis/client";
import { type Sale, saleIsOver, waitingLines } from "../sales/sale";
import { treeHash } from "../shared/draw-proof";
import { hexBytes, toHex } from "../shared/hex";
import { allLineBuckets, type Line, saleKeys } from "../shared/keys";
import { DRAW_CHUNK_LEAVES } from "../shared/limits";
import { log } from "../shared/log";
import type { JobMessage } from "../shared/messages";
import { DRAW_KEY_PATTERN, placeLeafHash } from "../shared/queue-draw-proof";
import { runSteps, STALLED_MS, type StepOutcome } from "./draw-run";
import {
  deleteQueueDrawPages,
  findQueueDrawRuns,
  insertPlacesPage,
  moveQueueDrawRun,
  placesPageRoots,
  type QueueDrawRun,
  startQueueDrawRuns,
} from "./queue-draw-records";

/** What the publication's steps need. */
export interface QueueDrawDeps {
  db: D1Database;
  redis: Redis;
  /** Places a page holds, a power of two (the tree's chunks); the run keeps the one it started with. */
  pageLeaves?: number;
}

/** A sale whose pre-queue is published: random, over, its keys not archived away. */
export const publishesPreQueue = (sale: Sale, now: number): boolean =>
  sale.queue.mode === "random" && saleIsOver(sale, now) && sale.archivedAt === null;

/** The lines whose pre-queues a random sale publishes: each presale lane's own, and the public line. */
const publishedLines = (sale: Sale): Line[] => waitingLines(sale).map((l) => l.lane);

/** Each bucket's size of a line's pre-queue (one pipelined call). */
const countPreQueue = async (redis: Redis, saleId: string, line: Line, buckets: number): Promise<number[]> =>
  (await Promise.all(allLineBuckets(saleId, line, buckets).map((b) => redis.zcard(b.preQueue)))).map(Number);

/**
 * Count: each bucket's size of the line's pre-queue, once it can no longer grow: Redis' clock
 * past the sale's start (later joiners go behind it; a lane's line stopped at the lane's, before
 * it), or the sale cancelled there; a sale Redis does not hold takes no join either.
 */
async function count(deps: QueueDrawDeps, sale: Sale, run: QueueDrawRun): Promise<StepOutcome> {
  const [time, [starts, state], counted] = await Promise.all([
    deps.redis.time(),
    hashFields(deps.redis, saleKeys(sale.id).meta, "starts", "state"),
    countPreQueue(deps.redis, sale.id, run.line, sale.buckets),
  ]);
  const redisNow = Number(time[0]) * 1000 + Math.floor(Number(time[1]) / 1000);
  if (starts !== null && state !== "cancelled" && redisNow < Number(starts))
    return { next: "wait", ms: Number(starts) - redisNow };
  const drawn = counted.reduce((n, size) => n + size, 0);
  await moveQueueDrawRun(deps.db, run, { phase: "pages", sizes: counted, drawn }).run();
  return { next: "step" };
}

/** The members holding ranks from..to - 1 of the run's line's pre-queue (bucket after bucket is the draw), as counted. */
async function membersBetween(redis: Redis, run: QueueDrawRun, sizes: number[], from: number, to: number): Promise<string[]> {
  const reads: Promise<string[]>[] = [];
  let offset = 0;
  for (const [b, { preQueue }] of allLineBuckets(run.saleId, run.line, sizes.length).entries()) {
    const size = sizes[b] ?? 0;
    const lo = Math.max(from, offset);
    const hi = Math.min(to, offset + size);
    if (lo < hi) reads.push(redis.zrange<string[]>(preQueue, lo - offset, hi - offset - 1));
    offset += size;
  }
  return (await Promise.all(reads)).flat().map(String);
}

/** A pre-queue member is "<draw key>:<bucket, after a q when quiet>:<user id>" (lua/waiting-room-join.lua): its draw key. */
function drawKeyOf(member: string): string {
  const key = member.slice(0, 64);
  if (!DRAW_KEY_PATTERN.test(key) || member[64] !== ":") throw new Error("a pre-queue member does not start with a draw key");
  return key;
}

/** Pages: one page of places into D1 with its root; after the last, the root over the pages', published. */
async function pages(deps: QueueDrawDeps, sale: Sale, run: QueueDrawRun): Promise<StepOutcome> {
  const pageCount = Math.ceil(run.drawn / run.pageLeaves);
  if (run.pages < pageCount) {
    const from = run.pages * run.pageLeaves;
    const to = Math.min(from + run.pageLeaves, run.drawn);
    const members = await membersBetween(deps.redis, run, run.sizes ?? [], from, to);
    if (members.length !== to - from)
      throw new Error(`sale ${sale.id}: the pre-queue holds ${members.length} of places ${from + 1}..${to} counted`);
    const drawKeys = members.map(drawKeyOf);
    const hashes = await Promise.all(drawKeys.map((key, i) => placeLeafHash(from + i + 1, key)));
    const root = toHex(await treeHash(hashes.map(hexBytes)));
    await deps.db.batch([
      insertPlacesPage(deps.db, run, { page: run.pages, drawKeys, root }),
      moveQueueDrawRun(deps.db, run, { pages: run.pages + 1 }),
    ]);
    return { next: "step" };
  }
  // The pre-queue stops growing at the start (lua/waiting-room-join.lua): a count that moved
  // since means pages read from two lists, so the publication starts again rather than publish them.
  const sizes = await countPreQueue(deps.redis, sale.id, run.line, run.sizes?.length ?? sale.buckets);
  if (sizes.some((size, b) => size !== run.sizes?.[b])) {
    log.error("waiting room: the pre-queue changed while it was published; publishing it again", {
      saleId: sale.id,
      line: run.line,
    });
    await deps.db.batch([
      deleteQueueDrawPages(deps.db, run),
      moveQueueDrawRun(deps.db, run, { phase: "count", sizes: null, drawn: 0, pages: 0 }),
    ]);
    return { next: "step" };
  }
  const roots = await placesPageRoots(deps.db, run);
  if (roots.length !== pageCount)
    throw new Error(`sale ${sale.id}: ${roots.length} pages of places written, ${pageCount} counted`);
  const placesRoot = toHex(await treeHash(roots.map(hexBytes)));
  await moveQueueDrawRun(deps.db, run, { phase: "ready", placesRoot, publishedAt: Date.now() }).run();
  log.info("waiting room: pre-queue published", { saleId: sale.id, line: run.line, drawn: run.drawn, placesRoot });
  return { next: "step" };
}

/** One step of the sale's publication (of its first line not published yet), starting it when the sale is over. */
export async function queueDrawStep(deps: QueueDrawDeps, sale: Sale): Promise<StepOutcome> {
  let runs = await findQueueDrawRuns(deps.db, sale.id);
  if (runs.length === 0) {
    if (!publishesPreQueue(sale, Date.now())) return { next: "done" };
    runs = (await startQueueDrawRuns(deps.db, sale.id, publishedLines(sale), deps.pageLeaves ?? DRAW_CHUNK_LEAVES)).runs;
  }
  const run = runs.find((r) => r.phase !== "ready");
  if (!run) return { next: "done" };
  return run.phase === "count" ? count(deps, sale, run) : pages(deps, sale, run);
}

/** Runs the sale's publication as far as one job may. Returns when to be run again (undefined: published). */
export const runQueueDraw = (deps: QueueDrawDeps, sale: Sale): Promise<number | undefined> =>
  runSteps(() => queueDrawStep(deps, sale));

const stepMessage = (saleId: string) => ({ body: { kind: "queue-draw-step", saleId } as const, contentType: "json" as const });

/**
 * The publication's run of `line` as it stands; the first read of a sale over starts its lines'
 * and sends their first step (later reads find them started). Undefined while the sale is not over.
 */
export async function readQueueDraw(
  db: D1Database,
  jobs: Queue<JobMessage>,
  sale: Sale,
  line: Line,
): Promise<QueueDrawRun | undefined> {
  let runs = await findQueueDrawRuns(db, sale.id);
  if (runs.length === 0 && publishesPreQueue(sale, Date.now())) {
    const start = await startQueueDrawRuns(db, sale.id, publishedLines(sale), DRAW_CHUNK_LEAVES);
    if (start.started) await jobs.send(stepMessage(sale.id).body, { contentType: "json" });
    runs = start.runs;
  }
  return runs.find((r) => r.line === line);
}

/**
 * The cron's part (every minute, the jobs queue's backstop): random sales over, whose keys are
 * not being archived, whose pre-queue is not published (not started, or a run that stalled: no
 * line of it moved for a while) are sent a step. Returns the sales it sent one.
 */
export async function superviseQueueDraws(db: D1Database, jobs: Queue<JobMessage>, now = Date.now()): Promise<string[]> {
  const { results } = await db
    .prepare(
      `SELECT s.id FROM sales s LEFT JOIN queue_draw_runs r ON r.sale_id = s.id
       WHERE s.queue_mode = 'random' AND (s.ends_at <= ?1 OR s.state = 'cancelled') AND s.archived_at IS NULL
         AND NOT EXISTS (SELECT 1 FROM sale_archives a WHERE a.sale_id = s.id)
       GROUP BY s.id
       HAVING COUNT(r.sale_id) = 0 OR (SUM(r.phase != 'ready') > 0 AND MAX(r.updated_at) < ?2)`,
    )
    .bind(now, now - STALLED_MS)
    .all<{ id: number }>();
  const stepped = results.map((row) => String(row.id));
  const messages = stepped.map(stepMessage);
  for (let i = 0; i < messages.length; i += 100) await jobs.sendBatch(messages.slice(i, i + 100));
  return stepped;
}

/** Whether the sale's pre-queue is published, every line of it, or it has none to publish: the clean-up may remove its keys. */
export async function preQueuePublished(db: D1Database, sale: Sale): Promise<boolean> {
  if (sale.queue.mode !== "random") return true;
  const runs = await findQueueDrawRuns(db, sale.id);
  return runs.length > 0 && runs.every((r) => r.phase === "ready");
}
