import { Lock, LockTimeoutError } from "../locks";
import { bloomAdd, bloomFill, bloomReady, fillProgress, markBloomReady } from "../redis/bloom";
import type { Redis } from "../redis/client";
import { saleIdsAfter, saleIdsCreatedSince } from "./repository";

/** Sales created this recently are added to the filter again on every run. */
const RECENT_MS = 10 * 60_000;
/** Ids per D1 page and per script call while filling. */
const FILL_PAGE = 1_000;
/** Pages one run fills at most (its D1 queries stay well inside an invocation's limits); the next run goes on. */
const FILL_PAGES_PER_RUN = 100;

/**
 * The Bloom filter's upkeep, every cron run. Filled: sales created in the last minutes are
 * added again, in case a create's own add failed. Not filled (a new database, or Redis lost
 * it): filled from D1, a bounded number of pages per run, resuming where the last run
 * stopped; it is trusted once the fill reaches the last sale (sales created meanwhile add
 * themselves). One run fills at a time. Returns how many ids were new to the filter.
 */
export async function keepBloomFilled(db: D1Database, redis: Redis): Promise<{ added: number; ready: boolean }> {
  if (await bloomReady(redis)) {
    return { added: await bloomAdd(redis, await saleIdsCreatedSince(db, Date.now() - RECENT_MS)), ready: true };
  }
  try {
    return await new Lock(redis, "catalog:bloom-fill").using(() => fillSome(db, redis), { leaseMs: 30_000, waitMs: 0 });
  } catch (err) {
    if (err instanceof LockTimeoutError) return { added: 0, ready: false }; // another run is filling
    throw err;
  }
}

async function fillSome(db: D1Database, redis: Redis): Promise<{ added: number; ready: boolean }> {
  let after = await fillProgress(redis);
  let added = 0;
  for (let page = 0; page < FILL_PAGES_PER_RUN; page++) {
    const ids = await saleIdsAfter(db, after, FILL_PAGE);
    const filled = await bloomFill(redis, after, ids);
    if (filled === undefined) {
      after = await fillProgress(redis);
      continue;
    }
    added += filled;
    if (ids.length < FILL_PAGE) {
      if (await markBloomReady(redis)) return { added, ready: true };
      after = "0"; // the bits were lost meanwhile: from the start
      continue;
    }
    after = ids.at(-1) as string;
  }
  return { added, ready: false };
}
