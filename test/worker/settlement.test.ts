import { createExecutionContext, createMessageBatch, env, getQueueResult } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { saleKeys } from "../../src/shared/keys";
import type { OrderMessage } from "../../src/shared/messages";
import { checkout, createSale, d1FailedOrders, d1Orders, eventually, redis, userToken } from "./helpers";

const QUEUE = "flash-sale-orders";

async function deliver(messages: { id: string; body: unknown; attempts?: number }[]) {
  const batch = createMessageBatch(
    QUEUE,
    messages.map((m) => ({ id: m.id, body: m.body, attempts: m.attempts ?? 1, timestamp: new Date() })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, env);
  return getQueueResult(batch, ctx);
}

/** A real reservation through checkout, so Redis holds its outbox record. */
async function reserveFor(saleId: string, userId: string): Promise<OrderMessage> {
  const res = await checkout(saleId, await userToken(userId));
  expect(res.status).toBe(202);
  const { orderId } = (await res.json()) as { orderId: string };
  return { orderId, saleId, userId, quantity: 1, reservedAt: Date.now() };
}

describe("settlement consumer", () => {
  it("settles a redelivered batch exactly once and clears the outbox", async () => {
    const sale = await createSale({ stock: 5 });
    const orders = [await reserveFor(sale.id, "s1"), await reserveFor(sale.id, "s2"), await reserveFor(sale.id, "s3")];
    // A message carries the orders of one merged checkout call.
    const messages = [
      { id: "m0", body: { orders: orders.slice(0, 2) } },
      { id: "m1", body: { orders: orders.slice(2) } },
    ];

    for (let delivery = 0; delivery < 3; delivery++) {
      const result = await deliver(messages);
      expect(result.retryMessages).toEqual([]);
      expect(new Set(result.explicitAcks)).toEqual(new Set(["m0", "m1"]));
    }
    const rows = await d1Orders(sale.id);
    expect(rows.map((r) => r.order_id).sort()).toEqual(orders.map((o) => o.orderId).sort());
    const sold = await env.DB.prepare("SELECT sold FROM sales WHERE id = ?").bind(Number(sale.id)).first<number>("sold");
    expect(sold).toBe(3);
    expect(await redis.zcard(saleKeys(sale.id).outbox)).toBe(0);
  });

  it("never lets D1 record more than the stock, and isolates the offending message", async () => {
    const sale = await createSale({ stock: 1 });
    const real = await reserveFor(sale.id, "legit");
    // A message Redis never accepted (stock was 1): D1's guard must refuse it on its own.
    const forged: OrderMessage = {
      orderId: "123456789012345",
      saleId: sale.id,
      userId: "intruder",
      quantity: 1,
      reservedAt: Date.now(),
    };
    const result = await deliver([
      { id: "ok", body: { orders: [real] } },
      { id: "over", body: { orders: [forged] } },
    ]);
    expect(result.explicitAcks).toEqual(["ok"]);
    expect(result.retryMessages.map((m: { msgId: string }) => m.msgId)).toEqual(["over"]);
    const rows = await d1Orders(sale.id);
    expect(rows.map((r) => r.user_id)).toEqual(["legit"]);
  });

  it("settles the good orders of a message with a poison one, and dead-letters only the poison one", async () => {
    const sale = await createSale({ stock: 1 });
    const real = await reserveFor(sale.id, "good");
    const forged: OrderMessage = {
      orderId: "223456789012345",
      saleId: sale.id,
      userId: "poison",
      quantity: 1,
      reservedAt: Date.now(),
    };
    const message = { id: "mixed", body: { orders: [real, forged] } };

    const first = await deliver([message]);
    expect(first.retryMessages.map((m: { msgId: string }) => m.msgId)).toEqual(["mixed"]);
    expect((await d1Orders(sale.id)).map((r) => r.user_id)).toEqual(["good"]);
    expect(await redis.zcard(saleKeys(sale.id).outbox)).toBe(0); // the good one is cleared already

    // The last attempt: the message is acked, and its poison order alone goes to the dead
    // letters (a real queue, consumed by the real Worker), recorded as failed in D1.
    const last = await deliver([{ ...message, attempts: 5 }]);
    expect(last.explicitAcks).toEqual(["mixed"]);
    const failed = await eventually("the poison order to be recorded as failed", async () => {
      const rows = await d1FailedOrders(sale.id);
      return rows.length > 0 ? rows : undefined;
    });
    expect(failed.map((r) => r.user_id)).toEqual(["poison"]);
    expect((await d1Orders(sale.id)).map((r) => r.user_id)).toEqual(["good"]);
  });

  it("acks malformed messages without writing anything", async () => {
    const before = await env.DB.prepare("SELECT COUNT(*) AS n FROM orders").first<number>("n");
    const result = await deliver([
      { id: "junk", body: { hello: "world" } },
      { id: "empty", body: { orders: [] } },
    ]);
    expect(result.explicitAcks).toEqual(["junk", "empty"]);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM orders").first<number>("n")).toBe(before);
  });
});
