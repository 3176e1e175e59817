// An operator's change whose push to Redis failed (Redis unreachable, or slower than its
// timeout) stands in D1, and Redis keeps serving the version before it until someone pushes it.
// Nobody has to: the request that made it sends a `sync-sale` job (retried with backoff until
// Redis takes it), and the cron pushes every sale whose record D1 holds ahead of Redis' copy.
// Meanwhile the console shows the sale as pending (`syncPending`). docs/architecture.md, "Sale
// operations".
import type { Redis } from "../redis/client";
import { log } from "../shared/log";
import type { JobMessage } from "../shared/messages";
import { forgetSale } from "./known-sales";
import { appliedVersion } from "./live-state";
import { propagateSale } from "./operations";
import { findSale } from "./repository";
import type { Sale } from "./sale";

/** Soon after a failed push: the jobs queue's own retries back off from there. */
const FIRST_RETRY_SECONDS = 2;

/** Asks the jobs queue to push the sale to Redis again; a send that fails is left to the cron, and logged. */
export async function scheduleSync(jobs: Queue<JobMessage>, saleId: string): Promise<void> {
  await jobs
    .send({ kind: "sync-sale", saleId }, { delaySeconds: FIRST_RETRY_SECONDS, contentType: "json" })
    .catch((err) => log.warn("sale's push to Redis not scheduled; the cron pushes it", { saleId }, err));
}

/**
 * After D1 recorded an operator's change: Redis' copy follows now (propagateSale), or, when
 * Redis cannot be reached, by itself later ("pending": a job is scheduled, the cron backs it);
 * "missing": Redis lost the sale's live state, which its rebuild from D1 brings back with this
 * change. This isolate reads the sale again either way.
 */
export async function pushOrSchedule(
  redis: Redis,
  jobs: Queue<JobMessage>,
  sale: Sale,
): Promise<"synced" | "pending" | "missing"> {
  forgetSale(sale.id);
  try {
    return await propagateSale(redis, jobs, sale);
  } catch (err) {
    log.warn("sale change recorded in D1 but not in Redis yet: it is pushed again by itself", { saleId: sale.id }, err);
    await scheduleSync(jobs, sale.id);
    return "pending";
  }
}

/** The `sync-sale` job: Redis' copy brought to D1's record. Throws while Redis cannot be reached (the job is retried). */
export async function syncSale(db: D1Database, redis: Redis, jobs: Queue<JobMessage>, saleId: string): Promise<void> {
  const sale = await findSale(db, saleId);
  if (sale) await propagateSale(redis, jobs, sale);
}

/**
 * The cron's part: every sale not ended nor archived that Redis holds at a version older than
 * D1's is pushed again. A sale Redis does not hold at all is the recovery's to rebuild
 * (src/settlement/recovery.ts), never loaded here. Returns the sales pushed.
 */
export async function pushLaggingSales(
  db: D1Database,
  redis: Redis,
  jobs: Queue<JobMessage>,
  now = Date.now(),
): Promise<string[]> {
  const { results } = await db
    .prepare("SELECT id, version FROM sales WHERE ends_at > ? AND archived_at IS NULL ORDER BY id")
    .bind(now)
    .all<{ id: number; version: number }>();
  // Issued together, the reads travel as one auto-pipelined round trip.
  const applied = await Promise.all(results.map((s) => appliedVersion(redis, String(s.id))));
  const behind = results.filter((s, i) => {
    const version = applied[i];
    return version !== undefined && version < s.version;
  });
  for (const { id } of behind) await syncSale(db, redis, jobs, String(id));
  if (behind.length > 0) log.info("sales pushed to Redis again", { saleIds: behind.map((s) => s.id).join(",") });
  return behind.map((s) => String(s.id));
}
