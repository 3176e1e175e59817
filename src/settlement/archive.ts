// The clean-up: once a sale has ended and everything settled, what the reconciliation report
// reads from Redis is archived to D1 and the sale's Redis keys are removed, a chunk at a
// time. Run by the cron every minute; each run is bounded, and any run may be the one that
// crashed: every step is safe to repeat.
import { preQueuePublished } from "../admission/queue-draw-run";
import { Lock, LockTimeoutError, lockKeys } from "../locks";
import { type Redis, redisFor } from "../redis/client";
import { findSaleArchive, markSaleArchived, recordSaleArchive, saleIdsToArchive } from "../sales/archives";
import { PURGE_CHUNK, PurgeBudget, purgeSaleKeys } from "../sales/purge";
import { findSale } from "../sales/repository";
import type { ReconciliationReport } from "../shared/api-types";
import { redriveLockName, SCAN_SALES_ENDED_WITHIN_MS } from "./redrive";
import { reconciliationReport } from "./report";
import { restoreLockName } from "./restore";

/**
 * How long after its end a sale keeps its keys: past the re-drive's window (a week), so
 * nothing that scans outboxes still needs them, plus an hour for a re-drive run that
 * listed the sale just before the window closed. By then every payment window has closed
 * (an hour at most) and the sweep has expired and returned what was left.
 */
export const ARCHIVE_GRACE_MS = SCAN_SALES_ENDED_WITHIN_MS + 3_600_000;

export interface ArchiveOptions {
  /** Archive sales that ended at least this long ago. */
  graceMs?: number;
  /** Members removed per command. */
  chunk?: number;
  /** Chunk commands per run, all sales together: a Worker invocation has a subrequest budget. */
  maxCommands?: number;
  /** Wall time per run (checked between commands). */
  budgetMs?: number;
  /** Sales looked at per run. */
  salesPerRun?: number;
  /** Only these sales (tests; an operator's run). */
  saleIds?: string[];
}

const DEFAULTS: Required<Omit<ArchiveOptions, "saleIds">> = {
  graceMs: ARCHIVE_GRACE_MS,
  chunk: PURGE_CHUNK,
  // 400 commands of 500 members: a million-buyer sale (its buyers and its checkout keys) is
  // cleaned in about ten runs, leaving the invocation's subrequests to the re-drive and sweep.
  maxCommands: 400,
  budgetMs: 20_000,
  salesPerRun: 20,
};

export interface ArchiveRun {
  /** Sales archived by this run: figures in D1, every key gone. */
  archived: string[];
  /** A sale whose keys are partly removed: the budget ran out, the next run goes on. */
  inProgress: string[];
  /** Ended sales with work not settled yet (Redis figures that do not reconcile, a pre-queue not published yet): left alone. */
  unsettled: string[];
  /** Chunk commands sent and members removed. */
  commands: number;
  removed: number;
  /** Another run holds the clean-up lock: this one did nothing. */
  skipped: boolean;
}

/**
 * One clean-up at a time, whichever cron run or operator starts it: a second run finds the
 * lock taken and does nothing (no wait: the first is doing the same work). One lock for the
 * whole clean-up rather than one per sale: a lock leaves its fencing counter behind, and a
 * counter per sale would itself be a key that outlives the sale.
 */
export const ARCHIVE_LOCK = "sales:archive";

/**
 * Archives every ended, settled sale it can within its budget. For each sale, in this order,
 * so a crash anywhere leaves something the next run finishes:
 * 1. the report's Redis figures go to D1 (sale_archives), once, only when the sale is settled
 *    for good (see `settledForGood`) and a random sale's pre-queue is published; a sale with an archive row is not checked again, its
 *    Redis figures being already half gone;
 * 2. its keys are removed, meta first (purgeSaleKeys): from then on the report reads the
 *    archive row, and no script writes the other keys back;
 * 3. sales.archived_at is set: readers no longer ask Redis at all, the re-drive and the
 *    clean-up no longer list the sale.
 */
export async function archiveSettledSales(env: Env, options: ArchiveOptions = {}): Promise<ArchiveRun> {
  const settings = { ...DEFAULTS, ...options };
  const redis = redisFor(env);
  try {
    return await new Lock(redis, ARCHIVE_LOCK).using((signal) => archiveRun(env, redis, settings, signal), {
      leaseMs: 15_000,
      waitMs: 0,
      maxHoldMs: settings.budgetMs + 30_000,
    });
  } catch (err) {
    if (err instanceof LockTimeoutError)
      return { archived: [], inProgress: [], unsettled: [], commands: 0, removed: 0, skipped: true };
    throw err;
  }
}

/**
 * Nothing about the sale can change any more, so nothing will need Redis: every minted order
 * is in D1 (none pending), none awaits payment, every ended order's units are back, and
 * Redis and D1 agree. Anything else is an operator's to look at, through the report.
 */
export function settledForGood(report: ReconciliationReport): boolean {
  return (
    report.redis.loaded &&
    report.reconciled &&
    report.pending === 0 &&
    report.d1.awaitingPayment === 0 &&
    report.returnsPending === 0 &&
    report.oversold === 0
  );
}

async function archiveRun(
  env: Env,
  redis: Redis,
  settings: typeof DEFAULTS & ArchiveOptions,
  signal: AbortSignal,
): Promise<ArchiveRun> {
  const run: ArchiveRun = { archived: [], inProgress: [], unsettled: [], commands: 0, removed: 0, skipped: false };
  const budget = new PurgeBudget(settings.chunk, settings.maxCommands, Date.now() + settings.budgetMs, signal);
  const candidates = await saleIdsToArchive(env.DB, Date.now() - settings.graceMs, settings.salesPerRun, settings.saleIds);
  for (const saleId of candidates) {
    if (budget.spent) break;
    const sale = await findSale(env.DB, saleId);
    if (!sale || sale.archivedAt !== null) continue;
    if (!(await findSaleArchive(env.DB, saleId))) {
      const report = await reconciliationReport(env, sale);
      // A random sale's pre-queue is read from Redis when it is published: its keys wait for that.
      if (!settledForGood(report) || !(await preQueuePublished(env.DB, sale))) {
        run.unsettled.push(saleId);
        continue;
      }
      const { remaining, minted, buyers, returned } = report.redis;
      // Each variant's as the report read it (a sale without variants keeps only the total).
      const remainingByVariant = Object.fromEntries(sale.variants.map((v) => [v.id, report.variants[v.id]?.remaining ?? 0]));
      await recordSaleArchive(env.DB, saleId, { remaining: remaining ?? 0, remainingByVariant, minted, buyers, returned });
    }
    // The re-drive's and the restore's lock counters go too: the re-drive takes its lock only
    // for a sale with outbox records to re-send (it looks first), and this one has none left;
    // a restore refuses a sale whose keys are archived.
    const lockCounters = [lockKeys(redriveLockName(saleId)).fence, lockKeys(restoreLockName(saleId)).fence];
    const done = await purgeSaleKeys(redis, sale, budget, lockCounters);
    if (!done) {
      run.inProgress.push(saleId);
      break;
    }
    await markSaleArchived(env.DB, saleId);
    run.archived.push(saleId);
  }
  run.commands = budget.commands;
  run.removed = budget.removed;
  return run;
}
