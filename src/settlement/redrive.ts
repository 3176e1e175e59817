import { type Redis, redisFor } from "../redis/client";
import { listRecentSaleIds } from "../sales/repository";
import { QUEUE_MESSAGE_MAX_ORDERS } from "../shared/limits";
import { log } from "../shared/log";
import type { OrderMessage } from "../shared/messages";
import { sendOrderMessage } from "./enqueue";
import { staleOutboxOrders, touchOutbox } from "./outbox";

/** Outboxes of sales that ended longer ago than this are no longer scanned. */
const SCAN_SALES_ENDED_WITHIN_MS = 7 * 24 * 3_600_000;
const MAX_PER_SALE_PER_RUN = 1_000;

const DEFAULT_REDRIVE_AFTER_MS = 30_000;

/** OUTBOX_REDRIVE_AFTER_MS as a number; "0" is a valid setting (re-drive every record). */
function redriveThresholdMs(configured: string | undefined): number {
  const ms = configured?.trim() ? Number(configured) : Number.NaN;
  return Number.isFinite(ms) && ms >= 0 ? ms : DEFAULT_REDRIVE_AFTER_MS;
}

/**
 * The scheduled re-drive: every outbox record older than OUTBOX_REDRIVE_AFTER_MS was either
 * never sent, lost, or is still being retried; it is sent again (the consumer ignores
 * repeats) and its clock restarted. Returns how many orders were re-sent. One sale that
 * fails does not hold back the others; the run reports it and the next run retries it.
 */
export async function redriveOutbox(env: Env, now = Date.now()): Promise<number> {
  const threshold = redriveThresholdMs(env.OUTBOX_REDRIVE_AFTER_MS);
  const redis = redisFor(env);
  let resent = 0;
  let failures = 0;
  for (const saleId of await listRecentSaleIds(env.DB, now, SCAN_SALES_ENDED_WITHIN_MS)) {
    try {
      resent += await redriveSale(env, redis, saleId, now - threshold, now);
    } catch (err) {
      failures++;
      log.error("outbox re-drive failed for a sale", { saleId }, err);
    }
  }
  if (failures > 0) throw new Error(`outbox re-drive failed for ${failures} sale(s); re-sent ${resent}`);
  return resent;
}

async function redriveSale(env: Env, redis: Redis, saleId: string, olderThanMs: number, now: number): Promise<number> {
  const stale = await staleOutboxOrders(redis, saleId, olderThanMs, MAX_PER_SALE_PER_RUN);
  for (let i = 0; i < stale.length; i += QUEUE_MESSAGE_MAX_ORDERS) {
    const chunk: OrderMessage[] = stale.slice(i, i + QUEUE_MESSAGE_MAX_ORDERS);
    await sendOrderMessage(env.ORDERS, chunk);
    await touchOutbox(redis, saleId, chunk, now);
  }
  return stale.length;
}
