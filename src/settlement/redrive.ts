import { Lock, type LockOptions, LockTimeoutError } from "../locks";
import { type Redis, redisFor } from "../redis/client";
import { listRecentSales } from "../sales/repository";
import type { BucketSplit } from "../shared/keys";
import { QUEUE_MESSAGE_MAX_ORDERS } from "../shared/limits";
import { log } from "../shared/log";
import type { OrderMessage } from "../shared/messages";
import { settingsOf } from "../shared/settings";
import { sendOrderMessage } from "./enqueue";
import { hasStaleOutboxOrders, staleOutboxOrders, touchOutbox } from "./outbox";

/** Outboxes of sales that ended longer ago than this are no longer scanned (nor those of archived sales). */
export const SCAN_SALES_ENDED_WITHIN_MS = 7 * 24 * 3_600_000;
const MAX_PER_SALE_PER_RUN = 1_000;

/**
 * A run re-drives a sale only while it holds the sale's re-drive lock (renewed while it
 * works), so two overlapping runs never re-send one sale's records at once; a run that
 * finds the lock taken leaves that sale to the run holding it. A single attempt: waiting
 * would only re-send what the other run just sent.
 */
const REDRIVE_LOCK: LockOptions = { leaseMs: 15_000, waitMs: 0 };
export const redriveLockName = (saleId: string) => `redrive:sale:${saleId}`;

/**
 * The scheduled re-drive: every outbox record older than OUTBOX_REDRIVE_AFTER_MS was either
 * never sent, lost, or is still being retried; it is sent again (the consumer ignores
 * repeats) and its clock restarted. Returns how many orders were re-sent. One sale that
 * fails does not hold back the others; the run reports it and the next run retries it.
 * A sale another run is re-driving right now is skipped.
 */
export async function redriveOutbox(env: Env, now = Date.now()): Promise<number> {
  const threshold = settingsOf(env).OUTBOX_REDRIVE_AFTER_MS;
  const redis = redisFor(env);
  let resent = 0;
  let failures = 0;
  for (const { saleId, split } of await listRecentSales(env.DB, now, SCAN_SALES_ENDED_WITHIN_MS)) {
    try {
      // A look without the lock first: most sales have nothing to re-drive, and a sale whose
      // keys the clean-up is removing never gets its lock's keys written back.
      if (!(await hasStaleOutboxOrders(redis, saleId, split.count, now - threshold))) continue;
      resent += await new Lock(redis, redriveLockName(saleId)).using(
        () => redriveSale(env, redis, saleId, split, now - threshold, now),
        REDRIVE_LOCK,
      );
    } catch (err) {
      if (err instanceof LockTimeoutError) {
        log.info("outbox re-drive: another run holds this sale; skipped", { saleId });
        continue;
      }
      failures++;
      log.error("outbox re-drive failed for a sale", { saleId }, err);
    }
  }
  if (failures > 0) throw new Error(`outbox re-drive failed for ${failures} sale(s); re-sent ${resent}`);
  return resent;
}

async function redriveSale(
  env: Env,
  redis: Redis,
  saleId: string,
  split: BucketSplit,
  olderThanMs: number,
  now: number,
): Promise<number> {
  const stale = await staleOutboxOrders(redis, saleId, split.count, olderThanMs, MAX_PER_SALE_PER_RUN);
  for (let i = 0; i < stale.length; i += QUEUE_MESSAGE_MAX_ORDERS) {
    const chunk: OrderMessage[] = stale.slice(i, i + QUEUE_MESSAGE_MAX_ORDERS);
    await sendOrderMessage(env.ORDERS, chunk);
    await touchOutbox(redis, saleId, split, chunk, now);
  }
  return stale.length;
}
