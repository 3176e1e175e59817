import * as z from "zod/mini";
import { countOrdersInFunnel } from "../analytics/funnel";
import { recordFailures } from "../orders/settlement-writes";
import { returnUnits } from "../orders/units";
import { redisFor } from "../redis/client";
import { log } from "../shared/log";
import { type DeadLetter, type OrderMessage, SettlementMessageSchema } from "../shared/messages";
import { clearOutbox } from "./outbox";

/**
 * Orders that could never settle: recorded in D1 as failed, then their reservations are
 * released (lua/return.lua) so the units go back on sale and the buyer may try again.
 * A message the orders queue gave up on by itself carries no reason: nothing judged its
 * orders (the consumer kept failing, e.g. through a long outage), so they are not failed;
 * their outbox records stay in Redis and the re-drive sends them again until they settle.
 * An order that did settle after all (a lost ack) is only cleared from the outbox.
 * Any error retries the whole batch; every step is idempotent. Returns the reservations it
 * released, so the caller can tell this isolate's memo.
 */
export async function handleDeadLetters(batch: MessageBatch<unknown>, env: Env): Promise<OrderMessage[]> {
  const letters: DeadLetter[] = [];
  for (const message of batch.messages) {
    const parsed = z.safeParse(SettlementMessageSchema, message.body);
    if (!parsed.success) log.error("dead letters: dropping a malformed message", { messageId: message.id });
    else if (parsed.data.reason === undefined)
      log.warn("dead letters: orders the queue gave up on are left to the outbox re-drive", {
        orders: parsed.data.orders.length,
      });
    else letters.push(...parsed.data.orders.map((o) => ({ ...o, reason: parsed.data.reason })));
  }
  let released: OrderMessage[] = [];
  if (letters.length > 0) {
    const failed = await recordFailures(env.DB, letters);
    const redis = redisFor(env);
    const [, returned] = await Promise.all([
      clearOutbox(
        redis,
        env.DB,
        letters.filter((l) => !failed.has(l.orderId)),
      ),
      returnUnits(
        redis,
        env.DB,
        letters.filter((l) => failed.has(l.orderId)),
      ),
    ]);
    released = returned.now;
    // Each failed order is released once (lua/return.lua): counted then, however often its letter comes.
    countOrdersInFunnel("failed", released);
  }
  batch.ackAll();
  return released;
}
