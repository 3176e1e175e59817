import type { OrderMessage, SettlementMessage } from "./order-message";
import { QUEUE_MESSAGE_MAX_ORDERS } from "./queue-limits";

/** One message carrying at most QUEUE_MESSAGE_MAX_ORDERS orders. */
export function sendOrderMessage(queue: Queue<SettlementMessage>, orders: OrderMessage[]): Promise<unknown> {
  return queue.send({ orders }, { contentType: "json" });
}

/**
 * Sends accepted orders to the settlement queue, a message per QUEUE_MESSAGE_MAX_ORDERS,
 * retrying a message once at once. A send that still fails is not an error for the buyers:
 * the reservations and their outbox records stand, and the scheduled re-drive sends them later.
 */
export async function enqueueOrders(queue: Queue<SettlementMessage>, orders: OrderMessage[]): Promise<void> {
  for (let i = 0; i < orders.length; i += QUEUE_MESSAGE_MAX_ORDERS) {
    const chunk = orders.slice(i, i + QUEUE_MESSAGE_MAX_ORDERS);
    for (let attempt = 1; attempt <= 2; attempt++) {
      try {
        await sendOrderMessage(queue, chunk);
        break;
      } catch (err) {
        if (attempt === 2) console.warn(`queue send failed twice for ${chunk.length} order(s); left to the re-drive`, err);
      }
    }
  }
}
