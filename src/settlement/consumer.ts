import { redisFor } from "../redis/client";
import { settleOrders } from "./d1-orders";
import { type OrderMessage, OrderMessageSchema } from "./order-message";
import { clearOutbox, releaseReservation } from "./outbox";

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
  const failed = new Set<string>();
  try {
    const known = await settleOrders(
      env.DB,
      valid.map((v) => v.order),
    );
    settled.push(...valid.map((v) => v.order));
    for (const id of known) failed.add(id);
  } catch (batchError) {
    console.warn(`settlement: batch of ${valid.length} failed, settling one by one`, batchError);
    for (const { message, order } of valid) {
      try {
        const known = await settleOrders(env.DB, [order]);
        settled.push(order);
        for (const id of known) failed.add(id);
      } catch (err) {
        await retryOrGiveUp(env, message, order, err);
      }
    }
  }

  const settledIds = new Set(settled.map((o) => o.orderId));
  for (const { message, order } of valid) if (settledIds.has(order.orderId)) message.ack();

  try {
    const redis = redisFor(env);
    // An order a dead letter failed may come back (a re-drive, a redelivery): its release
    // may never have run (e.g. the dead letter was dropped while Redis was unreachable), so
    // do it here; release.lua is idempotent and also clears the outbox record.
    await Promise.all([
      clearOutbox(
        redis,
        settled.filter((o) => !failed.has(o.orderId)),
      ),
      ...settled.filter((o) => failed.has(o.orderId)).map((o) => releaseReservation(redis, o)),
    ]);
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
