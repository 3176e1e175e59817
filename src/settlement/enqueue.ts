import type { OrderMessage } from "./order-message";

/**
 * Sends an accepted order to the settlement queue, retrying once at once. A send that still
 * fails is not an error for the buyer: the reservation and its outbox record stand, and the
 * scheduled re-drive sends the order later.
 */
export async function enqueueOrder(queue: Queue<OrderMessage>, order: OrderMessage): Promise<boolean> {
  for (let attempt = 1; attempt <= 2; attempt++) {
    try {
      await queue.send(order, { contentType: "json" });
      return true;
    } catch (err) {
      if (attempt === 2) console.warn(`queue send failed twice for order ${order.orderId}; left to the re-drive`, err);
    }
  }
  return false;
}
