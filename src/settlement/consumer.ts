import { redisFor } from "../redis/client";
import { settleOrders } from "./d1-orders";
import { type OrderMessage, OrderMessageSchema } from "./order-message";
import { clearOutbox } from "./outbox";

/** Attempts before the consumer gives an order up to the dead-letter queue itself. */
const MAX_ATTEMPTS = 5;
const backoffSeconds = (attempts: number) => Math.min(2 ** attempts, 60);

/**
 * Settles a batch: all orders in one D1 batch when that works; otherwise order by order,
 * so one poison message cannot hold back the others. Each message is acked or retried on
 * its own; after MAX_ATTEMPTS it goes to the dead-letter queue with the last error.
 * Outbox records are cleared only after D1 has committed.
 */
export async function settleBatch(batch: MessageBatch<unknown>, env: Env): Promise<void> {
  const valid: { message: Message<unknown>; order: OrderMessage }[] = [];
  for (const message of batch.messages) {
    const parsed = OrderMessageSchema.safeParse(message.body);
    if (parsed.success) {
      valid.push({ message, order: parsed.data });
    } else {
      // Not an order at all: nothing to settle or release, and retrying cannot help.
      console.error("settlement: dropping malformed message", message.id, parsed.error.issues[0]?.message);
      message.ack();
    }
  }
  if (valid.length === 0) return;

  const settled: OrderMessage[] = [];
  try {
    await settleOrders(
      env.DB,
      valid.map((v) => v.order),
    );
    settled.push(...valid.map((v) => v.order));
  } catch (batchError) {
    console.warn(`settlement: batch of ${valid.length} failed, settling one by one`, batchError);
    for (const { message, order } of valid) {
      try {
        await settleOrders(env.DB, [order]);
        settled.push(order);
      } catch (err) {
        await retryOrGiveUp(env, message, order, err);
      }
    }
  }

  const settledIds = new Set(settled.map((o) => o.orderId));
  for (const { message, order } of valid) if (settledIds.has(order.orderId)) message.ack();

  try {
    await clearOutbox(redisFor(env), settled);
  } catch (err) {
    // Harmless: the re-drive re-sends them and the idempotent insert ignores the repeat.
    console.warn("settlement: outbox clear failed; re-drive will repeat these", err);
  }
}

async function retryOrGiveUp(env: Env, message: Message<unknown>, order: OrderMessage, err: unknown): Promise<void> {
  if (message.attempts < MAX_ATTEMPTS) {
    message.retry({ delaySeconds: backoffSeconds(message.attempts) });
    return;
  }
  const reason = (err instanceof Error ? err.message : String(err)).slice(0, 500);
  try {
    await env.ORDERS_DLQ.send({ ...order, reason }, { contentType: "json" });
    message.ack();
  } catch {
    // The queue's own dead_letter_queue takes it once its retries run out.
    message.retry({ delaySeconds: backoffSeconds(message.attempts) });
  }
}
