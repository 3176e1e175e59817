import { redisFor } from "../redis/client";
import { listRecentSaleIds } from "../sales/repository";
import type { OrderMessage } from "./order-message";
import { staleOutboxOrders, touchOutbox } from "./outbox";

const QUEUE_BATCH_LIMIT = 100;
/** Outboxes of sales that ended longer ago than this are no longer scanned. */
const SCAN_SALES_ENDED_WITHIN_MS = 7 * 24 * 3_600_000;
const MAX_PER_SALE_PER_RUN = 1_000;

/**
 * The scheduled re-drive: every outbox record older than OUTBOX_REDRIVE_AFTER_MS was either
 * never sent, lost, or is still being retried; it is sent again (the consumer ignores
 * repeats) and its clock restarted. Returns how many orders were re-sent.
 */
export async function redriveOutbox(env: Env, now = Date.now()): Promise<number> {
  const threshold = Number(env.OUTBOX_REDRIVE_AFTER_MS) || 30_000;
  const redis = redisFor(env);
  let resent = 0;
  for (const saleId of await listRecentSaleIds(env.DB, now, SCAN_SALES_ENDED_WITHIN_MS)) {
    const stale = await staleOutboxOrders(redis, saleId, now - threshold, MAX_PER_SALE_PER_RUN);
    for (let i = 0; i < stale.length; i += QUEUE_BATCH_LIMIT) {
      const chunk: OrderMessage[] = stale.slice(i, i + QUEUE_BATCH_LIMIT);
      await env.ORDERS.sendBatch(chunk.map((body) => ({ body, contentType: "json" as const })));
      await touchOutbox(redis, saleId, chunk, now);
      resent += chunk.length;
    }
  }
  return resent;
}
