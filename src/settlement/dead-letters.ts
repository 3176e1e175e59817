import { recordFailures } from "../orders/repository";
import { redisFor } from "../redis/client";
import { log } from "../shared/log";
import { type DeadLetter, type OrderMessage, SettlementMessageSchema } from "../shared/messages";
import { clearOutbox, releaseReservation } from "./outbox";

/**
 * Orders that could never settle: recorded in D1 as failed, then their reservations are
 * released (lua/release.lua) so the unit goes back on sale and the buyer may try again.
 * A message the orders queue gave up on by itself carries no reason.
 * An order that did settle after all (a lost ack) is only cleared from the outbox.
 * Any error retries the whole batch; every step is idempotent. Returns the reservations it
 * released, so the caller can tell this isolate's memo.
 */
export async function handleDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<OrderMessage[]> {
  const letters: DeadLetter[] = [];
  for (const message of batch.messages) {
    const parsed = SettlementMessageSchema.safeParse(message.body);
    if (parsed.success) letters.push(...parsed.data.orders.map((o) => ({ ...o, reason: parsed.data.reason })));
    else log.error("dead letters: dropping a malformed message", { messageId: message.id });
  }
  const released: OrderMessage[] = [];
  if (letters.length > 0) {
    const failed = await recordFailures(env.DB, letters);
    const redis = redisFor(env);
    await Promise.all(
      letters.map(async (l) => {
        if (!failed.has(l.orderId)) return clearOutbox(redis, [l]);
        if (await releaseReservation(redis, l)) released.push(l);
      }),
    );
  }
  batch.ackAll();
  return released;
}
