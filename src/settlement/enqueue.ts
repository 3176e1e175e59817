import type { OrderMessage } from "./order-message";

/** The most messages one sendBatch may carry. */
export const QUEUE_BATCH_LIMIT = 100;

/** One sendBatch of at most QUEUE_BATCH_LIMIT orders. */
export function sendOrderBatch(queue: Queue<OrderMessage>, orders: OrderMessage[]): Promise<unknown> {
  return queue.sendBatch(orders.map((body) => ({ body, contentType: "json" as const })));
}

/**
 * Sends accepted orders to the settlement queue, a batch per QUEUE_BATCH_LIMIT, retrying a
 * batch once at once. A send that still fails is not an error for the buyers: the
 * reservations and their outbox records stand, and the scheduled re-drive sends them later.
 */
export async function enqueueOrders(queue: Queue<OrderMessage>, orders: OrderMessage[]): Promise<void> {
  for (let i = 0; i < orders.length; i += QUEUE_BATCH_LIMIT) {
    const batch = orders.slice(i, i + QUEUE_BATCH_LIMIT);
    for (let attempt = 1; attempt <= 2; attempt++) {
      try {
        await sendOrderBatch(queue, batch);
        break;
      } catch (err) {
        if (attempt === 2) console.warn(`queue send failed twice for ${batch.length} order(s); left to the re-drive`, err);
      }
    }
  }
}
