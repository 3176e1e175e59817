// Faults that cannot be caused for real inside workerd, injected by calling the Worker's own
// handlers with a wrapped env: a Queue send that throws, D1 refusing or losing the answer to
// a write, a consumer invocation that dies before its acks reach the queue. Everything else
// is real: redis-server behind the gateway, local D1, the local queues and their consumers.
import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  env,
  getQueueResult,
  waitOnExecutionContext,
} from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { lockKeys } from "../../src/locks/keys";
import { endpointsChanged } from "../../src/orders/event-deliveries";
import { MAX_ATTEMPTS } from "../../src/settlement/consumer";
import { redriveLockName } from "../../src/settlement/redrive";
import { bucketKeys, parsePendingRecord } from "../../src/shared/keys";
import type { DeadLetter, OrderMessage, SettlementMessage } from "../../src/shared/messages";
import {
  BASE,
  bearer,
  checkout,
  createSale,
  d1FailedOrders,
  d1Orders,
  eventually,
  expectSettledInvariants,
  internalId,
  orderStatus,
  redis,
  remaining,
  report,
  userToken,
  waitForConfirmed,
} from "./helpers";

const ORDERS_QUEUE = "flash-sale-orders";
const DEAD_LETTER_QUEUE = "flash-sale-orders-dlq";

/** What getQueueResult reports (its type is not exported by the pool). */
interface QueueResult {
  explicitAcks: string[];
  retryMessages: { msgId: string }[];
  retryBatch: { retry: boolean };
}

type Checkout = { user: string; status: number; orderId?: string; code?: string };

/** POST checkout through the Worker's fetch handler with `testEnv`, waiting for its waitUntil work. */
async function checkoutWith(testEnv: Env, saleId: string, user: string): Promise<Checkout> {
  const ctx = createExecutionContext();
  const req = new Request(`${BASE}/api/sales/${saleId}/checkout`, { method: "POST", headers: bearer(await userToken(user)) });
  const res = await worker.fetch(req, testEnv, ctx);
  await waitOnExecutionContext(ctx);
  const body = (await res.json()) as { orderId?: string; error?: { code: string } };
  // The internal id, as the queues, the outbox and D1 carry it.
  return { user, status: res.status, orderId: body.orderId && internalId(body.orderId), code: body.error?.code };
}

/** Runs the scheduled handler once, as the cron trigger would, with every outbox record stale. */
async function runRedrive(queue: Queue<SettlementMessage> = env.ORDERS): Promise<void> {
  await worker.scheduled(createScheduledController(), { ...env, ORDERS: queue, OUTBOX_REDRIVE_AFTER_MS: "0" });
}

async function outboxOrderIds(saleId: string): Promise<string[]> {
  const members = (await redis.zrange(bucketKeys(saleId, 0, 1).outbox, 0, -1)) as unknown as string[];
  return members.map((m) => String(m).split(":")[0] as string).sort();
}

/**
 * FAULT INJECTION (a Queue send cannot be made to fail locally): a producer whose send()
 * throws when `fails` says so for the orders its message carries on that attempt (an
 * order's attempt counts the messages it was in), and otherwise passes through to the real
 * queue. It notes every order it was asked to send and every order it really sent.
 */
function flakyQueue(fails: (orders: OrderMessage[], attempt: number) => boolean) {
  const attempts = new Map<string, number>();
  const asked: OrderMessage[] = [];
  const messageSizes: number[] = [];
  const delivered = new Set<string>();
  const queue = {
    async send(body: SettlementMessage, options?: QueueSendOptions) {
      asked.push(...body.orders);
      messageSizes.push(body.orders.length);
      let attempt = 0;
      for (const o of body.orders) {
        attempts.set(o.orderId, (attempts.get(o.orderId) ?? 0) + 1);
        attempt = Math.max(attempt, attempts.get(o.orderId) ?? 0);
      }
      if (fails(body.orders, attempt)) throw new Error("Queue send failed (injected)");
      await env.ORDERS.send(body, options);
      for (const o of body.orders) delivered.add(o.orderId);
    },
  } as unknown as Queue<SettlementMessage>;
  return { queue, attempts, asked, messageSizes, delivered };
}

/**
 * FAULT INJECTION (D1 cannot be made to fail locally): a D1 binding whose batch() consults
 * `fault` with the order ids its INSERT INTO orders statements carry, and then either
 * refuses the write ("before": nothing committed), commits it and throws anyway ("after":
 * the answer was lost), or passes it through.
 */
function flakyD1(fault: (orderIds: string[]) => "before" | "after" | undefined): D1Database {
  const orderIdOf = new WeakMap<D1PreparedStatement, string>();
  const real = env.DB;
  const db = {
    prepare(sql: string) {
      const stmt = real.prepare(sql);
      const insertsOrder = /^\s*INSERT INTO orders\b/i.test(sql);
      return new Proxy(stmt, {
        get(target, prop) {
          if (prop === "bind") {
            return (...args: unknown[]) => {
              const bound = target.bind(...args);
              if (insertsOrder) orderIdOf.set(bound, String(args[0]));
              return bound;
            };
          }
          const value = Reflect.get(target, prop, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      });
    },
    async batch(statements: D1PreparedStatement[]) {
      const orderIds = statements.flatMap((s) => orderIdOf.get(s) ?? []);
      const injected = orderIds.length > 0 ? fault(orderIds) : undefined;
      if (injected === "before") throw new Error("D1_ERROR: database is locked (injected)");
      const results = await real.batch(statements);
      if (injected === "after") throw new Error("D1_ERROR: network connection lost (injected, after commit)");
      return results;
    },
  };
  return new Proxy(real, {
    get(target, prop) {
      if (prop in db) return db[prop as keyof typeof db];
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The batch as the consumer sees it, noting the delay each retry() asks for (a spy, no fault). */
function observeRetries(batch: MessageBatch<unknown>, requested: Map<string, number | undefined>): MessageBatch<unknown> {
  const messages = batch.messages.map(
    (m) =>
      new Proxy(m, {
        get(target, prop) {
          if (prop === "retry") {
            return (options?: QueueRetryOptions) => {
              requested.set(target.id, options?.delaySeconds);
              target.retry(options);
            };
          }
          const value = Reflect.get(target, prop, target);
          return typeof value === "function" ? value.bind(target) : value;
        },
      }),
  );
  return {
    queue: batch.queue,
    metadata: batch.metadata,
    messages,
    ackAll: () => batch.ackAll(),
    retryAll: (options) => batch.retryAll(options),
  };
}

/**
 * Plays the queue for `orders`, one message each: delivers them in one batch to the consumer with `testEnv`,
 * then redelivers whatever was retried (or, when `crash` says the invocation died before its
 * acks reached the queue, everything) with attempts + 1, until nothing is left.
 * Returns each retry's requested delay per order, in order.
 */
async function deliverUntilSettled(
  testEnv: Env,
  orders: OrderMessage[],
  crash: (round: number) => boolean = () => false,
): Promise<Map<string, number[]>> {
  const delays = new Map<string, number[]>();
  let pending = orders.map((order) => ({ id: `m-${order.orderId}`, order, attempts: 1 }));
  for (let round = 1; pending.length > 0; round++) {
    expect(round, "deliveries never finished").toBeLessThan(20);
    const batch = createMessageBatch(
      ORDERS_QUEUE,
      pending.map((m) => ({ id: m.id, body: { orders: [m.order] }, attempts: m.attempts, timestamp: new Date() })),
    );
    const requested = new Map<string, number | undefined>();
    const ctx = createExecutionContext();
    await worker.queue(observeRetries(batch, requested), testEnv);
    const result = (await getQueueResult(batch, ctx)) as QueueResult;
    let again: typeof pending;
    if (crash(round)) {
      // FAULT INJECTION: the invocation died after its D1 work, so no ack counted.
      again = pending;
    } else {
      expect(result.retryBatch.retry).toBe(false);
      const retried = new Map(result.retryMessages.map((r) => [r.msgId, requested.get(r.msgId) ?? 0]));
      for (const m of pending) {
        const delay = retried.get(m.id);
        if (delay !== undefined) delays.set(m.order.orderId, [...(delays.get(m.order.orderId) ?? []), delay]);
      }
      again = pending.filter((m) => retried.has(m.id));
    }
    pending = again.map((m) => ({ ...m, attempts: m.attempts + 1 }));
  }
  return delays;
}

async function deliverDeadLetter(letter: DeadLetter): Promise<void> {
  const batch = createMessageBatch(DEAD_LETTER_QUEUE, [
    { id: `dl-${letter.orderId}`, body: { orders: [letter], reason: letter.reason }, attempts: 1, timestamp: new Date() },
  ]);
  const ctx = createExecutionContext();
  await worker.queue(batch, env);
  const result = (await getQueueResult(batch, ctx)) as QueueResult & { ackAll: boolean };
  expect(result.ackAll).toBe(true);
}

/** Accepted orders of a crowd, user -> order id; everyone else must have been refused as sold out. */
function acceptedOf(results: Checkout[], stock: number): Map<string, string> {
  const accepted = new Map<string, string>();
  for (const r of results) {
    if (r.status === 202) accepted.set(r.user, r.orderId as string);
    else expect([r.status, r.code]).toEqual([409, "SOLD_OUT"]);
  }
  expect(accepted.size).toBe(stock);
  return accepted;
}

describe("nothing lost when the queue send fails", () => {
  it("settles every accepted order: sends retried once at once, the rest re-driven by the scheduled handler", async () => {
    const stock = 24;
    const sale = await createSale({ stock, name: "flaky send" });
    const users = Array.from({ length: 36 }, (_, i) => `send-${sale.id}-${i}`);
    const lost = new Set(users.filter((_, i) => i % 3 === 0)); // both attempts fail
    const once = new Set(users.filter((_, i) => i % 3 === 1)); // the first attempt fails
    const flaky = flakyQueue((bodies, attempt) =>
      bodies.some((b) => lost.has(b.userId) || (once.has(b.userId) && attempt === 1)),
    );

    // One buyer at a time, so every send carries one order and the faults hit exactly the
    // orders chosen above (concurrent checkouts would share a send; the spike tests do that).
    const results: Checkout[] = [];
    for (const u of users) results.push(await checkoutWith({ ...env, ORDERS: flaky.queue }, sale.id, u));
    const accepted = acceptedOf(results, stock);

    // One immediate retry, never more; the lost ones are left to the re-drive.
    for (const [user, orderId] of accepted) {
      const tries = flaky.attempts.get(orderId);
      if (lost.has(user) || once.has(user)) expect(tries).toBe(2);
      else expect(tries).toBe(1);
    }
    const lostIds = [...accepted.values()].filter((id) => !flaky.delivered.has(id));
    const sentIds = [...accepted.values()].filter((id) => flaky.delivered.has(id));
    expect(lostIds).toEqual([...accepted].filter(([u]) => lost.has(u)).map(([, id]) => id));
    expect(lostIds.length).toBeGreaterThan(0);
    expect(sentIds.length).toBeGreaterThan(0);

    await waitForConfirmed(sentIds);
    // The sent ones were cleared from the outbox after D1 committed; the lost ones wait there.
    expect(
      await eventually("outbox to hold only the unsent orders", async () => {
        const ids = await outboxOrderIds(sale.id);
        return ids.length === lostIds.length ? ids : undefined;
      }),
    ).toEqual([...lostIds].sort());
    const [lostUser, lostOrder] = [...accepted].find(([u]) => lost.has(u)) as [string, string];
    expect(await orderStatus(lostOrder, lostUser)).toEqual({ http: 200, status: "pending" });
    const before = await report(sale.id);
    expect(before.pending).toBe(lostIds.length);
    expect(before.d1.confirmed).toBe(sentIds.length);
    expect(before.reconciled).toBe(true);
    // The outbox record keeps the request's trace (a new one: the request sent none)...
    const lostRecord = await redis.hget(bucketKeys(sale.id, 0, 1).pending, lostOrder);
    const { traceparent } = parsePendingRecord(String(lostRecord));
    expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);

    // A re-drive whose own send fails changes nothing: the records wait for the next run.
    // FAULT INJECTION: send throws.
    const failingQueue = {
      send: () => Promise.reject(new Error("Queue send failed (injected)")),
    } as unknown as Queue<SettlementMessage>;
    await runRedrive(failingQueue).catch(() => {});
    expect(await outboxOrderIds(sale.id)).toEqual([...lostIds].sort());

    // Two runs back to back: the second re-sends whatever the consumer has not cleared yet,
    // so the queue carries duplicates.
    await runRedrive();
    await runRedrive();
    const r = await expectSettledInvariants(sale.id, stock, accepted);
    expect(r.redis.remaining).toBe(0);
    expect(await orderStatus(lostOrder, lostUser)).toEqual({ http: 200, status: "confirmed" });
    // ...and the re-drive carried it on to the settled row.
    expect(await env.DB.prepare("SELECT traceparent FROM orders WHERE order_id = ?").bind(lostOrder).first()).toEqual({
      traceparent,
    });

    // Re-driving again (a duplicate) changes nothing.
    await runRedrive();
    await expectSettledInvariants(sale.id, stock, accepted);
  });
});

describe("nothing lost when a merged call's queue send fails", () => {
  it("leaves every order of the failed message to the re-drive, which settles them all once", async () => {
    const stock = 30;
    const sale = await createSale({ stock, name: "merged send fails" });
    const users = Array.from({ length: 40 }, (_, i) => `merged-send-${sale.id}-${i}`);
    // FAULT INJECTION: every send fails (twice each: the immediate retry too).
    const down = flakyQueue(() => true);
    const results = await Promise.all(users.map((u) => checkoutWith({ ...env, ORDERS: down.queue }, sale.id, u)));
    const accepted = acceptedOf(results, stock);
    expect(Math.max(...down.messageSizes)).toBeGreaterThan(1); // checkouts were merged into shared messages
    expect(new Set(down.asked.map((o) => o.orderId))).toEqual(new Set(accepted.values()));
    expect(await outboxOrderIds(sale.id)).toEqual([...accepted.values()].sort());

    await runRedrive();
    const r = await expectSettledInvariants(sale.id, stock, accepted);
    expect(r.redis.remaining).toBe(0);
    expect(r.pending).toBe(0);
  });
});

describe("nothing lost when the consumer or D1 fails", () => {
  it("settles through transient D1 errors, lost commits and crashed invocations; a poison order is failed and released", async () => {
    const stock = 12;
    const sale = await createSale({ stock, name: "flaky d1" });
    const users = Array.from({ length: 16 }, (_, i) => `d1-${sale.id}-${i}`);
    // FAULT INJECTION: every send fails, so no order reaches the real consumer; this test
    // plays the queue itself (at-least-once, with retries) with the bodies checkout sent.
    const unsent = flakyQueue(() => true);
    const results = await Promise.all(users.map((u) => checkoutWith({ ...env, ORDERS: unsent.queue }, sale.id, u)));
    const accepted = acceptedOf(results, stock);
    const orders = [...new Map(unsent.asked.map((o) => [o.orderId, o])).values()];
    expect(orders.map((o) => o.orderId).sort()).toEqual([...accepted.values()].sort());

    const [poisonUser, poisonOrder] = [...accepted][3] as [string, string];
    const [ackLostUser, ackLostOrder] = [...accepted][7] as [string, string];
    const transient = new Set([...accepted].slice(8, 11).map(([, id]) => id));
    const singleTries = new Map<string, number>();
    const db = flakyD1((orderIds) => {
      if (orderIds.includes(poisonOrder)) return "before"; // D1 refuses this order, always
      const [only] = orderIds;
      if (orderIds.length !== 1 || only === undefined) return undefined;
      const tries = (singleTries.get(only) ?? 0) + 1;
      singleTries.set(only, tries);
      if (transient.has(only) && tries <= 2) return "before"; // refused twice, then fine
      if (only === ackLostOrder && tries === 1) return "after"; // committed, but the answer was lost
      return undefined;
    });
    const remainingBefore = await remaining(sale.id);
    expect(remainingBefore).toBe(0);

    // Round 2 crashes after its D1 work: everything is delivered again.
    const delays = await deliverUntilSettled({ ...env, DB: db }, orders, (round) => round === 2);

    // Backoff grows with the attempts; the poison order was retried MAX_ATTEMPTS - 1 times,
    // then handed to the dead-letter queue (a real one, consumed by the real Worker).
    // (Attempt 2 crashed, so it requested nothing.)
    expect(delays.get(poisonOrder)).toEqual([2, 8, 16]);
    expect(MAX_ATTEMPTS).toBe(5);
    for (const id of transient) expect(delays.get(id)).toEqual([2]); // round 2 crashed, round 3 settled
    expect(delays.get(ackLostOrder)).toEqual([2]);
    const failedRow = await eventually("the poison order to be recorded as failed", async () => {
      const rows = await d1FailedOrders(sale.id);
      return rows.length > 0 ? rows : undefined;
    });
    expect(failedRow).toEqual([{ order_id: poisonOrder, user_id: poisonUser, reason: expect.stringContaining("injected") }]);
    const confirmed = new Map([...accepted].filter(([u]) => u !== poisonUser));
    await waitForConfirmed([...confirmed.values()]);
    expect(confirmed.get(ackLostUser)).toBe(ackLostOrder);

    // Its owner sees it failed; its unit is back in stock and the user may buy again.
    expect(await orderStatus(poisonOrder, poisonUser)).toEqual({ http: 200, status: "failed" });
    expect(await eventually("the unit to return", async () => ((await remaining(sale.id)) === 1 ? 1 : undefined))).toBe(1);
    expect(await redis.hget(bucketKeys(sale.id, 0, 1).buyers, poisonUser)).toBeNull();
    let r = await report(sale.id);
    expect(r.d1).toMatchObject({ confirmed: stock - 1, failed: 1, soldCounter: stock - 1 });
    expect(r.pending).toBe(0);
    expect(r.reconciled).toBe(true);

    // The same dead letter again (queues deliver at least once): released once only.
    const letter: DeadLetter = { ...(orders.find((o) => o.orderId === poisonOrder) as OrderMessage), reason: "again" };
    await deliverDeadLetter(letter);
    expect(await remaining(sale.id)).toBe(1);
    // A stale redelivery of the failed order never settles it later.
    await deliverUntilSettled(env, [letter]);
    expect(await orderStatus(poisonOrder, poisonUser)).toEqual({ http: 200, status: "failed" });
    expect(await remaining(sale.id)).toBe(1);

    // The user buys the returned unit; that order confirms.
    const again = await checkout(sale.id, await userToken(poisonUser));
    const againBody = (await again.json()) as { orderId: string; error?: { code: string } };
    expect([again.status, againBody.error?.code]).toEqual([202, undefined]);
    const secondOrder = internalId(againBody.orderId);
    expect(secondOrder).not.toBe(poisonOrder);
    await waitForConfirmed([secondOrder]);
    expect(await orderStatus(secondOrder, poisonUser)).toEqual({ http: 200, status: "confirmed" });
    confirmed.set(poisonUser, secondOrder);

    // The old dead letter once more, now that the user holds a new order: nothing released.
    await deliverDeadLetter(letter);
    expect(await remaining(sale.id)).toBe(0);
    expect(await redis.hget(bucketKeys(sale.id, 0, 1).buyers, poisonUser)).toBe(`1:${secondOrder}`);

    r = await expectSettledInvariants(sale.id, stock, confirmed, new Map([[poisonUser, poisonOrder]]));
    expect(r.redis.minted).toBe(stock + 1);
  });

  it("does not release a dead letter whose order did settle (its ack was lost)", async () => {
    const sale = await createSale({ stock: 3, name: "settled dead letter" });
    const user = `dl-settled-${sale.id}`;
    const res = await checkout(sale.id, await userToken(user));
    expect(res.status).toBe(202);
    const orderId = internalId(((await res.json()) as { orderId: string }).orderId);
    await waitForConfirmed([orderId]);
    expect(await remaining(sale.id)).toBe(2);

    await deliverDeadLetter({
      orderId,
      saleId: sale.id,
      userId: user,
      quantity: 1,
      variant: "default",
      reservedAt: Date.now(),
      reason: "late",
    });
    expect(await orderStatus(orderId, user)).toEqual({ http: 200, status: "confirmed" });
    expect(await remaining(sale.id)).toBe(2);
    expect(await redis.hget(bucketKeys(sale.id, 0, 1).buyers, user)).toBe(`1:${orderId}`);
    expect(await d1FailedOrders(sale.id)).toEqual([]);
    await expectSettledInvariants(sale.id, 3, new Map([[user, orderId]]));
  });

  it("returns the unit of a failed order whose release never ran (dead letter dropped while Redis was unreachable)", async () => {
    const sale = await createSale({ stock: 1, name: "release lost" });
    const user = `release-lost-${sale.id}`;
    const unsent = flakyQueue(() => true); // FAULT INJECTION: the send fails; the outbox keeps it
    const c = await checkoutWith({ ...env, ORDERS: unsent.queue }, sale.id, user);
    expect(c.status).toBe(202);
    const order = unsent.asked[0] as OrderMessage;

    // The dead letter arrives while Redis cannot be reached (a real refused connection: nothing
    // listens on that port). D1 records the failure; the release fails, and so does every
    // retry until the dead-letter queue gives the message up.
    const batch = createMessageBatch(DEAD_LETTER_QUEUE, [
      { id: "dl", body: { orders: [order], reason: "poison" }, attempts: 10, timestamp: new Date() },
    ]);
    const unreachable = { ...env, UPSTASH_REDIS_REST_URL: "http://127.0.0.1:1" };
    await expect(worker.queue(batch, unreachable)).rejects.toThrow();
    expect(await orderStatus(c.orderId as string, user)).toEqual({ http: 200, status: "failed" });
    expect(await remaining(sale.id)).toBe(0);

    // The outbox still holds the order, so the re-drive sends it again; the consumer finds it
    // failed and must finish the release, or the unit is stuck forever.
    await runRedrive();
    expect(await eventually("the unit to return", async () => ((await remaining(sale.id)) === 1 ? 1 : undefined), 10_000)).toBe(
      1,
    );
    expect(await orderStatus(c.orderId as string, user)).toEqual({ http: 200, status: "failed" });
    const again = await checkout(sale.id, await userToken(user));
    expect(again.status).toBe(202);
    const { orderId } = (await again.json()) as { orderId: string };
    await expectSettledInvariants(sale.id, 1, new Map([[user, orderId]]), new Map([[user, c.orderId as string]]));
  });

  it("keeps a message the consumer could not hand to the dead-letter queue", async () => {
    const sale = await createSale({ stock: 2, name: "dlq send fails" });
    const user = `dlq-down-${sale.id}`;
    const unsent = flakyQueue(() => true);
    const c = await checkoutWith({ ...env, ORDERS: unsent.queue }, sale.id, user);
    expect(c.status).toBe(202);
    const order = unsent.asked[0] as OrderMessage;
    // FAULT INJECTION: D1 refuses the order and the dead-letter send throws too.
    const testEnv = {
      ...env,
      DB: flakyD1(() => "before"),
      ORDERS_DLQ: { send: () => Promise.reject(new Error("DLQ send failed (injected)")) } as unknown as Queue,
    };
    const batch = createMessageBatch(ORDERS_QUEUE, [
      { id: "last", body: { orders: [order] }, attempts: MAX_ATTEMPTS, timestamp: new Date() },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, testEnv);
    const result = (await getQueueResult(batch, ctx)) as QueueResult;
    // Retried, not acked: the queue's own dead_letter_queue takes it when its retries run out.
    expect(result.explicitAcks).toEqual([]);
    expect(result.retryMessages.map((m) => m.msgId)).toEqual(["last"]);
    expect(await d1Orders(sale.id)).toEqual([]);
    expect(await d1FailedOrders(sale.id)).toEqual([]);

    // The outbox still holds it, so the re-drive settles it once D1 works again.
    await runRedrive();
    await expectSettledInvariants(sale.id, 2, new Map([[user, c.orderId as string]]));
  });
});

describe("outages that outlast the consumer's retries", () => {
  it("fails no order because D1 was down or the consumer kept failing: the re-drive settles them once it is over", async () => {
    const sale = await createSale({ stock: 3, name: "long outage" });
    const users = [0, 1].map((i) => `long-outage-${sale.id}-${i}`);
    const unsent = flakyQueue(() => true); // FAULT INJECTION: the sends fail; the outbox keeps the orders
    for (const user of users) expect((await checkoutWith({ ...env, ORDERS: unsent.queue }, sale.id, user)).status).toBe(202);
    const [first, second] = [...new Map(unsent.asked.map((o) => [o.orderId, o])).values()] as [OrderMessage, OrderMessage];

    // FAULT INJECTION (D1 cannot be made unreachable inside the pool): every D1 call throws.
    const down = new Proxy(env.DB, {
      get: () => () => {
        throw new Error("D1_ERROR: Network connection lost (injected)");
      },
    });
    // The last attempt while D1 is down: nothing is wrong with the order, so it is neither
    // retried past its attempts nor dead-lettered; its outbox record stays.
    const last = createMessageBatch(ORDERS_QUEUE, [
      { id: "last", body: { orders: [first] }, attempts: MAX_ATTEMPTS, timestamp: new Date() },
    ]);
    // Nor does the order events' kick after the settlement fail the batch: the isolate reads
    // again whether any endpoint is enabled (as it does every few seconds), and D1 is down.
    endpointsChanged();
    await worker.queue(last, { ...env, DB: down });
    const lastResult = (await getQueueResult(last, createExecutionContext())) as QueueResult;
    expect(lastResult.explicitAcks).toEqual(["last"]);
    // The queue gave up on the other by itself (the consumer kept failing): its dead letter has
    // no reason, and nothing judged the order, so it is not failed either.
    const given = createMessageBatch(DEAD_LETTER_QUEUE, [
      { id: "gave-up", body: { orders: [second] }, attempts: 1, timestamp: new Date() },
    ]);
    await worker.queue(given, env);
    expect(await d1FailedOrders(sale.id)).toEqual([]);
    expect(await outboxOrderIds(sale.id)).toEqual([first.orderId, second.orderId].sort());

    // Over: the re-drive sends both again, and both settle once.
    await runRedrive();
    await waitForConfirmed([first.orderId, second.orderId]);
    await expectSettledInvariants(sale.id, 3, new Map(users.map((u, i) => [u, (i === 0 ? first : second).orderId])));
  });
});

describe("overlapping re-drive runs", () => {
  it("never re-send one sale at once: the run holding the sale's lock re-drives it, the other skips it", async () => {
    const sale = await createSale({ stock: 3, name: "overlapping re-drives" });
    // FAULT INJECTION: send throws, so the orders wait in the outbox for the re-drive.
    const failing = {
      send: () => Promise.reject(new Error("Queue send failed (injected)")),
    } as unknown as Queue<SettlementMessage>;
    const results: Checkout[] = [];
    for (const u of ["a", "b", "c"])
      results.push(await checkoutWith({ ...env, ORDERS: failing }, sale.id, `overlap-${sale.id}-${u}`));
    const accepted = acceptedOf(results, 3);

    // FAULT INJECTION (a send cannot be made slow locally): the first run's send of this
    // sale's records hangs until released, so the second run starts while the first is
    // still re-driving the sale. Other sales' records pass straight through.
    let inFlight = 0;
    let maxInFlight = 0;
    const sent = { first: 0, second: 0 };
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let firstSending: () => void = () => undefined;
    const firstIsSending = new Promise<void>((resolve) => {
      firstSending = resolve;
    });
    const queueFor = (run: "first" | "second") =>
      ({
        async send(body: SettlementMessage, options?: QueueSendOptions) {
          if (body.orders.some((o) => o.saleId === sale.id)) {
            maxInFlight = Math.max(maxInFlight, ++inFlight);
            sent[run]++;
            if (run === "first") {
              firstSending();
              await released;
            }
            inFlight--;
          }
          return env.ORDERS.send(body, options);
        },
      }) as unknown as Queue<SettlementMessage>;

    const first = runRedrive(queueFor("first"));
    await firstIsSending;
    await runRedrive(queueFor("second")); // ends while the first run still holds the sale
    expect(sent.second).toBe(0);
    release();
    await first;
    expect(sent.first).toBe(1);
    expect(maxInFlight).toBe(1);
    // The first run let the lock go: the next run may re-drive the sale again.
    expect(await redis.exists(lockKeys(redriveLockName(sale.id)).lock)).toBe(0);
    await expectSettledInvariants(sale.id, 3, accepted);
  });
});
