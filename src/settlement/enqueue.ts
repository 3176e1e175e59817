import { log } from "../shared/log";
import type { OrderMessage, SettlementMessage } from "../shared/messages";

/** One message carrying at most QUEUE_MESSAGE_MAX_ORDERS orders. */
export function sendOrderMessage(queue: Queue<SettlementMessage>, orders: OrderMessage[]): Promise<unknown> {
  return queue.send({ orders }, { contentType: "json" });
}

/**
 * Sends the orders of one merged checkout call (at most QUEUE_MESSAGE_MAX_ORDERS) to the
 * settlement queue as one message, retrying once at once. A send that still fails is not an
 * error for the buyers: the reservations and their outbox records stand, and the scheduled
 * re-drive sends them later.
 */
export async function enqueueOrders(queue: Queue<SettlementMessage>, orders: OrderMessage[]): Promise<void> {
  for (let attempt = 1; attempt <= 2; attempt++) {
    try {
      await sendOrderMessage(queue, orders);
      return;
    } catch (err) {
      if (attempt === 2) log.warn("queue send failed twice; orders left to the re-drive", { orders: orders.length }, err);
    }
  }
}
