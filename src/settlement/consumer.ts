import * as z from "zod/mini";
import { countOrdersInFunnel } from "../analytics/funnel";
import { returnEnded, scheduleExpiries } from "../orders/lifecycle";
import type { AwaitingOrder, EndedOrder } from "../orders/order-transitions";
import { settleOrders } from "../orders/settlement-writes";
import { returnUnits } from "../orders/units";
import { redisFor } from "../redis/client";
import { QUEUE_MESSAGE_MAX_ORDERS } from "../shared/limits";
import { log } from "../shared/log";
import { type OrderMessage, type SettlementMessage, SettlementMessageSchema } from "../shared/messages";
import { traceIdOf } from "../shared/trace";
import { clearOutbox } from "./outbox";
import { failRolledBack } from "./recovery";

/** Attempts of a message before the consumer hands its still-failing orders to the dead-letter queue itself. */
export const MAX_ATTEMPTS = 5;
const backoffSeconds = (attempts: number) => Math.min(2 ** attempts, 60);

interface Delivery {
  message: Message<unknown>;
  orders: OrderMessage[];
}

/** What settling found: orders written (or already there), those D1 records as failed, those awaiting payment, those cancelled with their sale. */
interface Settled {
  orders: OrderMessage[];
  failedIds: Set<string>;
  awaiting: AwaitingOrder[];
  cancelled: EndedOrder[];
}

/**
 * Settles a batch of messages, each carrying up to QUEUE_MESSAGE_MAX_ORDERS orders: a D1
 * batch per QUEUE_MESSAGE_MAX_ORDERS orders when that works; otherwise message by message,
 * then (for a broken rule, or on the last attempt) order by order, so one poison order
 * cannot hold back the others. A message is acked once all its orders settled, else
 * retried; after MAX_ATTEMPTS its orders that still fail go to the dead-letter queue with
 * the last error. Outbox records are cleared only after D1 has committed, orders that
 * await payment get their expiry scheduled, and orders of a cancelled sale their units
 * back. Returns the orders whose units came back, so the caller can tell this isolate's memo.
 */
export async function settleBatch(batch: MessageBatch<unknown>, env: Env): Promise<{ saleId: string; userId: string }[]> {
  const deliveries: Delivery[] = [];
  for (const message of batch.messages) {
    const parsed = z.safeParse(SettlementMessageSchema, message.body);
    if (parsed.success) {
      deliveries.push({ message, orders: parsed.data.orders });
    } else {
      // Not orders at all: nothing to settle or release, and retrying cannot help.
      log.error("settlement: dropping a malformed message", { messageId: message.id, problem: parsed.error.issues[0]?.message });
      message.ack();
    }
  }

  const settled: Settled = { orders: [], failedIds: new Set(), awaiting: [], cancelled: [] };
  for (const group of groupsOf(deliveries, QUEUE_MESSAGE_MAX_ORDERS)) {
    const orders = group.flatMap((d) => d.orders);
    try {
      record(settled, orders, await settleOrders(env.DB, orders));
      for (const d of group) d.message.ack();
    } catch (err) {
      log.warn("settlement: batch failed, settling message by message", { orders: orders.length }, err);
      if (group.length === 1) await settleDelivery(env, group[0] as Delivery, settled, err);
      else for (const delivery of group) await settleDelivery(env, delivery, settled);
    }
  }
  if (settled.orders.length === 0) return [];
  await scheduleExpiries(env.JOBS, settled.awaiting);

  try {
    const redis = redisFor(env);
    // An order a dead letter failed may come back (a re-drive, a redelivery): its release
    // may never have run (e.g. the dead letter was dropped while Redis was unreachable), so
    // do it here; return.lua is idempotent and also clears the outbox record.
    const [, released, cancelled] = await Promise.all([
      clearOutbox(
        redis,
        env.DB,
        settled.orders.filter((o) => !settled.failedIds.has(o.orderId)),
      ),
      returnUnits(
        redis,
        env.DB,
        settled.orders.filter((o) => settled.failedIds.has(o.orderId)),
      ),
      returnEnded(env.DB, redis, settled.cancelled),
    ]);
    return [...released.now, ...cancelled];
  } catch (err) {
    // Harmless: the re-drive re-sends them and the idempotent insert ignores the repeat.
    log.warn("settlement: outbox clear failed; re-drive will repeat these", {}, err);
    return [];
  }
}

/**
 * What one D1 batch settled: the orders it inserted reach the funnel's "settled", each with a
 * line of its own trace (the traceparent its message carried).
 */
function record(settled: Settled, orders: OrderMessage[], result: Awaited<ReturnType<typeof settleOrders>>): void {
  countOrdersInFunnel("settled", result.inserted);
  for (const o of result.inserted) {
    const trace = o.traceparent === undefined ? {} : { traceId: traceIdOf(o.traceparent), traceparent: o.traceparent };
    log.info("settlement: order settled", { ...trace, saleId: o.saleId, orderId: o.orderId, reservedAt: o.reservedAt });
  }
  settled.orders.push(...orders);
  for (const id of result.failedIds) settled.failedIds.add(id);
  settled.awaiting.push(...result.awaiting);
  settled.cancelled.push(...result.cancelled);
}

/** Consecutive deliveries holding at most `maxOrders` orders in all. */
function groupsOf(deliveries: Delivery[], maxOrders: number): Delivery[][] {
  const groups: Delivery[][] = [];
  let current: Delivery[] = [];
  let size = 0;
  for (const d of deliveries) {
    if (current.length > 0 && size + d.orders.length > maxOrders) {
      groups.push(current);
      current = [];
      size = 0;
    }
    current.push(d);
    size += d.orders.length;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}

/** A broken rule (CHECK, UNIQUE, NOT NULL): the same orders fail again however often they are sent. */
const isConstraintViolation = (err: unknown) => /constraint/i.test(err instanceof Error ? err.message : String(err));

/**
 * One message: its orders in one D1 batch (unless `failed` says that batch just failed).
 * A transient error hits every order alike, so the message is retried whole; a broken rule,
 * or the last attempt, is looked into order by order to find the orders that fail. An order
 * D1's guards refuse (stock, the buyer's limit) was sold by a Redis that went back: it ends
 * `failed` with REDIS_ROLLBACK at once, and the sale is rebuilt (src/settlement/recovery.ts).
 */
async function settleDelivery(env: Env, { message, orders }: Delivery, settled: Settled, failed?: unknown): Promise<void> {
  let error = failed;
  if (error === undefined) {
    try {
      record(settled, orders, await settleOrders(env.DB, orders));
      message.ack();
      return;
    } catch (err) {
      error = err;
    }
  }
  if (!isConstraintViolation(error) && message.attempts < MAX_ATTEMPTS) {
    message.retry({ delaySeconds: backoffSeconds(message.attempts) });
    return;
  }
  const stuck: { order: OrderMessage; err: unknown }[] = [];
  const refused: OrderMessage[] = [];
  for (const order of orders) {
    try {
      record(settled, [order], await settleOrders(env.DB, [order]));
    } catch (err) {
      if (isConstraintViolation(err)) refused.push(order);
      else stuck.push({ order, err });
    }
  }
  if (refused.length > 0) {
    try {
      await failRolledBack(env, refused);
    } catch (err) {
      stuck.push(...refused.map((order) => ({ order, err })));
    }
  }
  if (stuck.length === 0) message.ack();
  else await retryOrGiveUp(env, message, stuck);
}

/** Whether D1 answers at all (one trivial query). */
async function reachable(db: D1Database): Promise<boolean> {
  try {
    await db.prepare("SELECT 1").first();
    return true;
  } catch {
    return false;
  }
}

/** Retries the message (its settled orders are no-ops next time), or dead-letters what still fails. */
async function retryOrGiveUp(env: Env, message: Message<unknown>, stuck: { order: OrderMessage; err: unknown }[]) {
  if (message.attempts < MAX_ATTEMPTS) {
    message.retry({ delaySeconds: backoffSeconds(message.attempts) });
    return;
  }
  if (!(await reachable(env.DB))) {
    // D1 itself is down, nothing is wrong with these orders: their outbox records stay in
    // Redis, and the re-drive sends them again until D1 is back and they settle.
    log.warn("settlement: D1 unreachable; orders left to the outbox re-drive", { orders: stuck.length });
    message.ack();
    return;
  }
  const lastError = stuck.at(-1)?.err;
  const letter: SettlementMessage = {
    orders: stuck.map((s) => s.order),
    reason: (lastError instanceof Error ? lastError.message : String(lastError)).slice(0, 500),
  };
  try {
    await env.ORDERS_DLQ.send(letter, { contentType: "json" });
    message.ack();
  } catch {
    // The queue's own dead_letter_queue takes the whole message once its retries run out.
    message.retry({ delaySeconds: backoffSeconds(message.attempts) });
  }
}
