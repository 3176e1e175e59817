import { createExecutionContext, createMessageBatch, env, getQueueResult } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { bucketKeys, saleKeys } from "../../src/shared/keys";
import type { OrderMessage } from "../../src/shared/messages";
import { api, checkout, createSale, d1FailedOrders, d1Orders, internalId, redis, userToken } from "./helpers";

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
  // The message carries the internal id, as checkout's own send does.
  return { orderId: internalId(orderId), saleId, userId, quantity: 1, variant: "default", reservedAt: Date.now() };
}

describe("settlement consumer", () => {
  it("settles a redelivered batch exactly once and clears the outbox", async () => {
    const sale = await createSale({ stock: 5 });
    const other = await createSale({ stock: 5 });
    const orders = [await reserveFor(sale.id, "s1"), await reserveFor(sale.id, "s2"), await reserveFor(sale.id, "s3")];
    const otherOrder = await reserveFor(other.id, "s4");
    // A message carries the orders of one merged checkout call; a batch, several sales' messages.
    const messages = [
      { id: "m0", body: { orders: orders.slice(0, 2) } },
      { id: "m1", body: { orders: orders.slice(2) } },
      { id: "m2", body: { orders: [otherOrder] } },
    ];

    for (let delivery = 0; delivery < 3; delivery++) {
      const result = await deliver(messages);
      expect(result.retryMessages).toEqual([]);
      expect(new Set(result.explicitAcks)).toEqual(new Set(["m0", "m1", "m2"]));
    }
    const rows = await d1Orders(sale.id);
    expect(rows.map((r) => r.order_id).sort()).toEqual(orders.map((o) => o.orderId).sort());
    const sold = await env.DB.prepare("SELECT sold FROM sales WHERE id = ?").bind(Number(sale.id)).first<number>("sold");
    expect(sold).toBe(3);
    expect((await d1Orders(other.id)).map((r) => r.order_id)).toEqual([otherOrder.orderId]);
    for (const id of [sale.id, other.id]) {
      expect(await redis.zcard(bucketKeys(id, 0, 1).outbox)).toBe(0);
      expect(await redis.hlen(bucketKeys(id, 0, 1).pending)).toBe(0);
    }
  });

  it("never lets D1 record more than the stock: the order it refuses ends failed with REDIS_ROLLBACK, and the sale stops selling until rebuilt", async () => {
    const sale = await createSale({ stock: 1 });
    const real = await reserveFor(sale.id, "legit");
    // A message Redis never accepted (stock was 1): D1's guard must refuse it on its own.
    const forged: OrderMessage = {
      orderId: "123456789012345",
      saleId: sale.id,
      userId: "intruder",
      quantity: 1,
      variant: "default",
      reservedAt: Date.now(),
    };
    const result = await deliver([
      { id: "ok", body: { orders: [real] } },
      { id: "over", body: { orders: [forged] } },
    ]);
    // Only a Redis gone back sells what D1 refuses: no retry can help, the order fails at once.
    expect(new Set(result.explicitAcks)).toEqual(new Set(["ok", "over"]));
    expect(result.retryMessages).toEqual([]);
    const rows = await d1Orders(sale.id);
    expect(rows.map((r) => r.user_id)).toEqual(["legit"]);
    expect(await d1FailedOrders(sale.id)).toEqual([{ order_id: forged.orderId, user_id: "intruder", reason: "REDIS_ROLLBACK" }]);
    // Its buyer sees why.
    const seen = await api.order(forged.orderId, await userToken("intruder"));
    expect(seen.body).toMatchObject({ status: "failed", failureReason: "REDIS_ROLLBACK" });
    // Reported behind: Redis' copy is dropped (checkout answers 503) and D1 records why.
    expect(await redis.exists(saleKeys(sale.id).meta)).toBe(0);
    const recovery = await env.DB.prepare("SELECT state, detected_by, known_seq FROM sale_recovery WHERE sale_id = ?")
      .bind(Number(sale.id))
      .first();
    expect(recovery).toEqual({
      state: expect.stringMatching(/^(behind|rebuilding)$/),
      detected_by: "settlement",
      known_seq: 1, // where Redis stood (its sequence) when the forged order came
    });
  });

  it("settles the good orders of a message with one D1 refuses, and fails only that one", async () => {
    const sale = await createSale({ stock: 1 });
    const real = await reserveFor(sale.id, "good");
    const forged: OrderMessage = {
      orderId: "223456789012345",
      saleId: sale.id,
      userId: "poison",
      quantity: 1,
      variant: "default",
      reservedAt: Date.now(),
    };
    const message = { id: "mixed", body: { orders: [real, forged] } };

    const first = await deliver([message]);
    expect(first.explicitAcks).toEqual(["mixed"]);
    expect((await d1Orders(sale.id)).map((r) => r.user_id)).toEqual(["good"]);
    expect(await redis.zcard(bucketKeys(sale.id, 0, 1).outbox)).toBe(0); // the good one is cleared
    expect((await d1FailedOrders(sale.id)).map((r) => [r.user_id, r.reason])).toEqual([["poison", "REDIS_ROLLBACK"]]);
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
