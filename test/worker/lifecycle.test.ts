// An order's life after the 202, through the real routes, queues and D1 inside workerd, with
// the dev payment provider's test tokens. Faults that cannot be caused for real here (D1
// refusing a write, a queue message lost, Redis unreachable for one call) are injected by
// calling the Worker's handlers with a wrapped env, and say so.
import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  env,
  waitOnExecutionContext,
} from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { webhookSignature } from "../../dev/lib/webhook-signing";
import worker from "../../src/index";
import type { OrderView } from "../../src/shared/api-types";
import type { JobMessage, OrderMessage } from "../../src/shared/messages";
import { api, BASE, createSale, eventually, internalId, LOOPBACK_BASE, redis, remaining, report } from "./helpers";

const JOBS_QUEUE = "flash-sale-jobs";
const ORDERS_QUEUE = "flash-sale-orders";

async function buy(saleId: string, user: string, quantity = 1): Promise<string> {
  const answer = await api.checkout(saleId, await api.userToken(user), quantity);
  expect(answer, `${user} buys ${quantity}`).toMatchObject({ status: 202 });
  return answer.orderId as string;
}

/**
 * FAULT INJECTION (a queue send cannot be made to fail locally): checks out through a Worker
 * whose orders queue drops the send, so the order waits in the outbox until settled by hand.
 */
async function buyUnsettled(saleId: string, user: string): Promise<string> {
  const dropping = { ...env, ORDERS: { send: async () => {}, sendBatch: async () => {} } as unknown as Queue };
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    new Request(`${BASE}/api/sales/${saleId}/checkout`, {
      method: "POST",
      headers: { Authorization: `Bearer ${await api.userToken(user)}` },
    }),
    dropping,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  expect(res.status).toBe(202);
  return ((await res.json()) as { orderId: string }).orderId;
}

async function orderOf(orderId: string, user: string): Promise<OrderView> {
  const res = await api.order(orderId, await api.userToken(user));
  expect(res.status).toBe(200);
  return res.body as OrderView;
}

/** Waits (reading D1, so the buyer's own rate limit is not spent on polling) for the order's state, then reads it as its buyer. */
async function settledAs(orderId: string, user: string, status: OrderView["status"]): Promise<OrderView> {
  await eventually(`order ${orderId} to be ${status}`, async () => {
    const row = await env.DB.prepare("SELECT status FROM orders WHERE order_id = ?")
      .bind(internalId(orderId))
      .first<{ status: string }>();
    return row?.status === status;
  });
  return orderOf(orderId, user);
}

/**
 * FAULT INJECTION (a queue message cannot be made to vanish locally): settles an order through
 * the consumer with a jobs queue that drops every message, so its expiry job is lost.
 */
async function settleWithoutExpiryJob(saleId: string, user: string, orderId: string): Promise<void> {
  const dropping = { ...env, JOBS: { send: async () => {}, sendBatch: async () => {} } as unknown as Queue };
  const message: OrderMessage = {
    orderId: internalId(orderId),
    saleId,
    userId: user,
    quantity: 1,
    variant: "default",
    reservedAt: Date.now(),
  };
  await worker.queue(
    createMessageBatch(ORDERS_QUEUE, [
      { id: `no-job-${orderId}`, timestamp: new Date(), attempts: 1, body: { orders: [message] } },
    ]),
    dropping,
  );
}

async function pay(orderId: string, user: string, paymentToken: string, key: string, testEnv: Env = env) {
  const ctx = createExecutionContext();
  const res = await worker.fetch(
    new Request(`${LOOPBACK_BASE}/api/orders/${orderId}/pay`, {
      method: "POST",
      headers: {
        Authorization: `Bearer ${await api.userToken(user)}`,
        "Content-Type": "application/json",
        "Idempotency-Key": key,
      },
      body: JSON.stringify({ paymentToken }),
    }),
    testEnv,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  const body = (await res.json()) as OrderView & { error?: { code: string; message: string } };
  return { status: res.status, body, retryAfter: res.headers.get("Retry-After") };
}

async function postWebhook(body: string, signature: string | undefined) {
  const res = await api.fetch("/webhooks/payments", {
    method: "POST",
    headers: { "Content-Type": "application/json", ...(signature && { "Webhook-Signature": signature }) },
    body,
  });
  return { status: res.status, body: (await res.json()) as { outcome?: string; error?: { code: string } } };
}

const signed = async (event: object, at?: number) => {
  const body = JSON.stringify(event);
  return postWebhook(body, await webhookSignature(env.PAYMENT_WEBHOOK_SECRET as string, body, at));
};

async function runJobs(messages: JobMessage[]): Promise<void> {
  const batch = createMessageBatch(
    JOBS_QUEUE,
    messages.map((body, i) => ({ id: `job-${i}-${Date.now()}`, timestamp: new Date(), attempts: 1, body })),
  );
  await worker.queue(batch, env);
}

/** The cron's run (re-drive and sweep), as the trigger would start it. */
async function runSweep(testEnv: Env = env): Promise<void> {
  await worker.scheduled(createScheduledController(), testEnv);
}

describe("a sale with a payment window", () => {
  it("shows its price and options, takes quantities, and settles orders as awaiting payment", async () => {
    const sale = await createSale({ stock: 10, price: 1999, currency: "EUR", paymentWindowSec: 600, perUserLimit: 3 });
    expect(await api.sale(sale.id)).toMatchObject({ price: 1999, currency: "EUR", paymentWindowSec: 600, perUserLimit: 3 });

    const res = await api.checkoutResponse(sale.id, await api.userToken("quinn"), {
      body: JSON.stringify({ quantity: 2 }),
      headers: { "Content-Type": "application/json" },
    });
    expect(res.status).toBe(202);
    const accepted = (await res.json()) as { orderId: string; status: string; quantity: number };
    expect(accepted).toEqual({
      orderId: expect.stringMatching(/^[1-9][0-9]+$/),
      status: "pending",
      quantity: 2,
      variant: "default",
    });

    const order = await settledAs(accepted.orderId, "quinn", "awaiting_payment");
    expect(order).toMatchObject({
      saleId: sale.id,
      userId: "quinn",
      quantity: 2,
      amount: 3998,
      currency: "EUR",
      refundDue: false,
    });
    const expiresIn = Date.parse(order.expiresAt as string) - Date.now();
    expect(expiresIn).toBeGreaterThan(590_000);
    expect(expiresIn).toBeLessThanOrEqual(600_000);

    // The limit: 2 held, 2 more would make 4 of 3.
    const over = await api.checkout(sale.id, await api.userToken("quinn"), 2);
    expect(over).toMatchObject({ status: 409, code: "PER_USER_LIMIT_EXCEEDED" });
    const tooMany = await api.checkout(sale.id, await api.userToken("quinn-2"), 4);
    expect(tooMany).toMatchObject({ status: 400, code: "BAD_REQUEST" });
    // Unknown fields are refused, like every other body's (a misspelt field is not ignored).
    const misspelt = await api.checkoutResponse(sale.id, await api.userToken("quinn-3"), {
      body: JSON.stringify({ quantity: 1, qty: 2 }),
      headers: { "Content-Type": "application/json" },
    });
    expect(misspelt.status).toBe(400);
    expect(await remaining(sale.id)).toBe(8);

    // Cancelled, both units come back, and the report counts the units as well as the order.
    expect(await api.cancel(accepted.orderId, await api.userToken("quinn"))).toMatchObject({ status: 200 });
    expect(await remaining(sale.id)).toBe(10);
    const r = await report(sale.id);
    expect(r.redis.returned).toBe(1);
    expect(r.d1.returnedUnits).toBe(2);
    expect(r.reconciled).toBe(true);
  });

  it("pays with the dev provider: declined stays payable, the same key gets the same answer, another body is refused", async () => {
    const sale = await createSale({ stock: 5, price: 500, paymentWindowSec: 600 });
    const orderId = await buy(sale.id, "payer");
    await settledAs(orderId, "payer", "awaiting_payment");

    const missingKey = await api.fetch(`/api/orders/${orderId}/pay`, {
      method: "POST",
      headers: { Authorization: `Bearer ${await api.userToken("payer")}`, "Content-Type": "application/json" },
      body: JSON.stringify({ paymentToken: "tok_visa" }),
    });
    expect(missingKey.status).toBe(400);

    const declined = await pay(orderId, "payer", "tok_chargeDeclined", "key-1");
    expect(declined).toMatchObject({ status: 402, body: { error: { code: "PAYMENT_DECLINED" } } });
    expect((await orderOf(orderId, "payer")).status).toBe("awaiting_payment");
    expect(await pay(orderId, "payer", "tok_chargeDeclined", "key-1")).toEqual(declined);
    // A decline for the provider's own reason is replayed in its words, not in generic ones.
    const unknownToken = await pay(orderId, "payer", "tok_nonesuch", "key-unknown");
    expect(unknownToken).toMatchObject({
      status: 402,
      body: { error: { message: expect.stringContaining("unknown test token") } },
    });
    expect(await pay(orderId, "payer", "tok_nonesuch", "key-unknown")).toEqual(unknownToken);
    expect(await pay(orderId, "payer", "tok_visa", "key-1")).toMatchObject({
      status: 422,
      body: { error: { code: "IDEMPOTENCY_KEY_REUSED" } },
    });

    await new Promise((r) => setTimeout(r, 1_000)); // the buyer's own rate limit (5/s, burst 10) covers paying too
    const paid = await pay(orderId, "payer", "tok_visa", "key-2");
    expect(paid).toMatchObject({ status: 200, body: { orderId, status: "paid", amount: 500, expiresAt: null } });
    expect(await pay(orderId, "payer", "tok_visa", "key-2")).toMatchObject({ status: 200, body: { status: "paid" } });
    const alreadyPaid = {
      status: 409,
      body: { error: { code: "ORDER_NOT_PAYABLE", message: expect.stringContaining("already paid") } },
    };
    expect(await pay(orderId, "payer", "tok_visa", "key-3")).toMatchObject(alreadyPaid);
    // The same key again: the same answer, and no second charge (the order is not owed a refund).
    expect(await pay(orderId, "payer", "tok_visa", "key-3")).toMatchObject(alreadyPaid);
    expect(await orderOf(orderId, "payer")).toMatchObject({ status: "paid", refundDue: false });
    expect(await api.cancel(orderId, await api.userToken("payer"))).toMatchObject({ status: 409, code: "ORDER_NOT_CANCELLABLE" });

    // Someone else's order is nobody's business: 404, like a missing one.
    expect((await pay(orderId, "stranger", "tok_visa", "key-4")).status).toBe(404);
    const r = await report(sale.id);
    expect(r.states.paid).toEqual({ orders: 1, units: 1 });
    expect(r.reconciled).toBe(true);
  });

  it("cancels an order awaiting payment: its unit is back at once and the buyer may buy again", async () => {
    const sale = await createSale({ stock: 1, paymentWindowSec: 600 });
    const orderId = await buy(sale.id, "canceller");
    await settledAs(orderId, "canceller", "awaiting_payment");
    expect(await api.checkout(sale.id, await api.userToken("late-buyer"))).toMatchObject({ status: 409, code: "SOLD_OUT" });

    const cancelled = await api.cancel(orderId, await api.userToken("canceller"));
    expect(cancelled).toMatchObject({ status: 200, body: { orderId, status: "cancelled", expiresAt: null } });
    expect(await remaining(sale.id)).toBe(1);
    expect(await api.cancel(orderId, await api.userToken("canceller"))).toMatchObject({
      status: 409,
      code: "ORDER_NOT_CANCELLABLE",
    });
    expect(await pay(orderId, "canceller", "tok_visa", "too-late")).toMatchObject({ status: 409 });

    // The isolate that ran the cancel forgot both the buyer and the sold-out sale.
    const again = await buy(sale.id, "canceller");
    expect(again).not.toBe(orderId);
    const r = await report(sale.id);
    expect(r.states.cancelled).toEqual({ orders: 1, units: 1 });
    expect(r.returnsPending).toBe(0);
  });

  it("expires an unpaid order when its window closes, on the jobs queue: the unit comes back once", async () => {
    const sale = await createSale({ stock: 1, paymentWindowSec: 1 });
    const orderId = await buy(sale.id, "sleeper");
    await settledAs(orderId, "sleeper", "awaiting_payment");
    const expired = await settledAs(orderId, "sleeper", "expired");
    expect(expired.expiresAt).toBeNull();
    await eventually("the unit to be back", async () => (await remaining(sale.id)) === 1);
    const tooLate = { status: 409, body: { error: { code: "ORDER_NOT_PAYABLE", message: expect.stringContaining("expired") } } };
    expect(await pay(orderId, "sleeper", "tok_visa", "after-expiry")).toMatchObject(tooLate);
    expect(await pay(orderId, "sleeper", "tok_visa", "after-expiry")).toMatchObject(tooLate); // no charge on the retry either
    const attempts = await env.DB.prepare("SELECT COUNT(*) AS n FROM payments WHERE order_id = ?")
      .bind(internalId(orderId))
      .first<{ n: number }>();
    expect(attempts?.n).toBe(0);
    expect(await orderOf(orderId, "sleeper")).toMatchObject({ status: "expired", refundDue: false });
    // Another expiry run or sweep changes nothing: the unit came back once.
    await runJobs([{ kind: "expire-orders", orderIds: [internalId(orderId)] }]);
    await runSweep();
    expect(await remaining(sale.id)).toBe(1);
    const r = await report(sale.id);
    expect(r.states.expired).toEqual({ orders: 1, units: 1 });
    expect(r.redis.returned).toBe(1);
    expect(r.reconciled).toBe(true);
  });

  it("answers 409 with Retry-After while the order is still pending", async () => {
    const sale = await createSale({ stock: 2, paymentWindowSec: 600 });
    const orderId = await buyUnsettled(sale.id, "early-payer");
    expect((await orderOf(orderId, "early-payer")).status).toBe("pending");
    const early = await pay(orderId, "early-payer", "tok_visa", "early");
    expect(early).toMatchObject({ status: 409, retryAfter: "1", body: { error: { code: "ORDER_NOT_PAYABLE" } } });
    expect(await api.cancel(orderId, await api.userToken("early-payer"))).toMatchObject({
      status: 409,
      code: "ORDER_NOT_CANCELLABLE",
    });
    await runSweep({ ...env, OUTBOX_REDRIVE_AFTER_MS: "0" });
    await settledAs(orderId, "early-payer", "awaiting_payment");
    expect(await pay(orderId, "early-payer", "tok_visa", "early")).toMatchObject({ status: 200, body: { status: "paid" } });
  });
});

describe("faults around payment and expiry", () => {
  it("a provider that never answers: 503 with Retry-After, and a retry with the same key charges once", async () => {
    const sale = await createSale({ stock: 1, paymentWindowSec: 600 });
    const orderId = await buy(sale.id, "patient");
    await settledAs(orderId, "patient", "awaiting_payment");
    const impatient = { ...env, PAYMENT_TIMEOUT_MS: "200" };
    const hung = await pay(orderId, "patient", "tok_timeout", "slow", impatient);
    expect(hung).toMatchObject({
      status: 503,
      retryAfter: expect.stringMatching(/^[1-9]/),
      body: { error: { code: "UNAVAILABLE" } },
    });
    expect((await orderOf(orderId, "patient")).status).toBe("awaiting_payment");
    expect(await pay(orderId, "patient", "tok_timeout", "slow", impatient)).toMatchObject({ status: 503 });
    expect(await redis.exists(`devpay:{${internalId(orderId)}:slow}`)).toBe(0); // a provider that never answered charged nothing
  });

  it("D1 down at payment: 503, and the retry with the same key is answered from the first charge", async () => {
    const sale = await createSale({ stock: 1, paymentWindowSec: 600 });
    const orderId = await buy(sale.id, "unlucky");
    await settledAs(orderId, "unlucky", "awaiting_payment");
    // FAULT INJECTION: D1 refuses the write that records the payment, after the charge: the
    // pay route's first batch (claiming the attempt) goes through, the next ones fail.
    let batches = 0;
    const failing = {
      ...env,
      DB: new Proxy(env.DB, {
        get(target, prop, receiver) {
          if (prop === "batch") {
            return (statements: D1PreparedStatement[]) =>
              ++batches === 1 ? target.batch(statements) : Promise.reject(new Error("D1_ERROR: database is locked (injected)"));
          }
          const value = Reflect.get(target, prop, receiver);
          return typeof value === "function" ? value.bind(target) : value;
        },
      }),
    };
    const down = await pay(orderId, "unlucky", "tok_visa", "retry-me", failing);
    expect(down).toMatchObject({ status: 503, body: { error: { code: "UNAVAILABLE" } } });
    expect((await orderOf(orderId, "unlucky")).status).toBe("awaiting_payment");
    const charge = await redis.get(`devpay:{${internalId(orderId)}:retry-me}`);
    expect(charge).toMatch(/"outcome":"succeeded"/); // the provider did charge once

    const retried = await pay(orderId, "unlucky", "tok_visa", "retry-me");
    expect(retried).toMatchObject({ status: 200, body: { status: "paid" } });
    expect(await redis.get(`devpay:{${internalId(orderId)}:retry-me}`)).toBe(charge); // and not again: the same charge answered
  });

  it("the expiry message lost: the cron sweep expires the order and returns its unit", async () => {
    const sale = await createSale({ stock: 1, paymentWindowSec: 1 });
    const orderId = await buyUnsettled(sale.id, "forgotten");
    await settleWithoutExpiryJob(sale.id, "forgotten", orderId);
    await settledAs(orderId, "forgotten", "awaiting_payment");
    await new Promise((r) => setTimeout(r, 1_200)); // past the window, which only the sweep will notice now
    await runSweep();
    expect((await orderOf(orderId, "forgotten")).status).toBe("expired");
    expect(await remaining(sale.id)).toBe(1);
    expect((await report(sale.id)).reconciled).toBe(true);
  });

  it("Redis down at expiry: D1 expires the order, the return is retried and the unit is never lost nor doubled", async () => {
    const sale = await createSale({ stock: 1, paymentWindowSec: 1 });
    const orderId = await buyUnsettled(sale.id, "stranded");
    await settleWithoutExpiryJob(sale.id, "stranded", orderId);
    await settledAs(orderId, "stranded", "awaiting_payment");
    await new Promise((r) => setTimeout(r, 1_200));
    // FAULT INJECTION: an env whose Redis is a closed port, for the expiry job and one sweep.
    const noRedis = { ...env, UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", REDIS_TIMEOUT_MS: "300" };
    await worker.queue(
      createMessageBatch(JOBS_QUEUE, [
        {
          id: `strand-${orderId}`,
          timestamp: new Date(),
          attempts: 1,
          body: { kind: "expire-orders", orderIds: [internalId(orderId)] },
        },
      ]),
      noRedis,
    );
    expect(await settledAs(orderId, "stranded", "expired")).toMatchObject({ status: "expired" });
    expect(await remaining(sale.id)).toBe(0); // D1 decided; Redis could not be told
    expect((await report(sale.id)).returnsPending).toBe(1);
    await runSweep(noRedis).catch(() => {});
    await runSweep();
    expect((await orderOf(orderId, "stranded")).status).toBe("expired");
    expect(await remaining(sale.id)).toBe(1);
    await runSweep();
    expect(await remaining(sale.id)).toBe(1);
    const r = await report(sale.id);
    expect(r.returnsPending).toBe(0);
    expect(r.reconciled).toBe(true);
  });
});

/** Which Idempotency-Key holds the order's payment claim, if any. */
async function claimOf(orderId: string): Promise<string | null> {
  const row = await env.DB.prepare("SELECT payment_claim FROM orders WHERE order_id = ?")
    .bind(internalId(orderId))
    .first<{ payment_claim: string | null }>();
  return row?.payment_claim ?? null;
}

/** The order's pay attempts as D1 records them, by key. */
async function attemptsOf(orderId: string): Promise<Record<string, string>> {
  const { results } = await env.DB.prepare("SELECT idempotency_key, status FROM payments WHERE order_id = ?")
    .bind(internalId(orderId))
    .all<{ idempotency_key: string; status: string }>();
  return Object.fromEntries(results.map((r) => [r.idempotency_key, r.status]));
}

describe("one payment in flight per order", () => {
  it("a declined first attempt releases the order: another key pays, and a third is told the order is paid", async () => {
    const sale = await createSale({ stock: 1, price: 800, paymentWindowSec: 600 });
    const orderId = await buy(sale.id, "second-card");
    await settledAs(orderId, "second-card", "awaiting_payment");
    expect(await pay(orderId, "second-card", "tok_chargeDeclined", "first-card")).toMatchObject({
      status: 402,
      body: { error: { code: "PAYMENT_DECLINED" } },
    });
    expect(await claimOf(orderId)).toBeNull();
    expect(await pay(orderId, "second-card", "tok_visa", "second-card")).toMatchObject({ status: 200, body: { status: "paid" } });
    const third = await pay(orderId, "second-card", "tok_visa", "third-card");
    expect(third).toMatchObject({
      status: 409,
      body: { error: { code: "ORDER_NOT_PAYABLE", message: "the order is already paid" } },
    });
    expect(await redis.exists(`devpay:{${internalId(orderId)}:third-card}`)).toBe(0); // refused before the provider
    expect(await attemptsOf(orderId)).toEqual({ "first-card": "declined", "second-card": "succeeded" });
    expect(await orderOf(orderId, "second-card")).toMatchObject({ status: "paid", refundDue: false });
    expect(await claimOf(orderId)).toBeNull();
  });

  it("another key while one is in flight gets 409 PAYMENT_IN_PROGRESS and charges nothing; a timed-out attempt holds the order until its window closes", async () => {
    const sale = await createSale({ stock: 1, price: 900, paymentWindowSec: 600 });
    const orderId = await buy(sale.id, "double-click");
    await settledAs(orderId, "double-click", "awaiting_payment");
    // Long enough that the first call is still in flight when the second arrives, even on a busy machine.
    const slow = { ...env, PAYMENT_TIMEOUT_MS: "4000" };
    const first = pay(orderId, "double-click", "tok_timeout", "click-1", slow);
    await eventually("the first click to claim the order", async () => (await claimOf(orderId)) === "click-1");
    const inProgress = { status: 409, body: { error: { code: "PAYMENT_IN_PROGRESS" } } };
    const second = await pay(orderId, "double-click", "tok_visa", "click-2", slow);
    expect(second).toMatchObject({ ...inProgress, retryAfter: expect.stringMatching(/^[1-4]$/) });
    expect(second.body.error?.message).toContain("being processed; nothing was charged");
    expect(await first).toMatchObject({ status: 503, body: { error: { code: "UNAVAILABLE" } } });

    // Its outcome unknown, the first attempt keeps the order: another key is still refused, for
    // as long as a provider call may take, and told how the first one's outcome is learnt.
    const third = await pay(orderId, "double-click", "tok_visa", "click-2", slow);
    expect(third).toMatchObject({ ...inProgress, retryAfter: "4" });
    expect(third.body.error?.message).toContain("outcome is not known yet");
    expect(await redis.exists(`devpay:{${internalId(orderId)}:click-2}`)).toBe(0);
    expect(await attemptsOf(orderId)).toEqual({ "click-1": "charging" });
    // The same key again is that attempt again (the provider would answer from its charge).
    expect(await pay(orderId, "double-click", "tok_timeout", "click-1", { ...env, PAYMENT_TIMEOUT_MS: "100" })).toMatchObject({
      status: 503,
    });
    // A success reported by webhook meanwhile waits for the attempt: not applied, delivered again later.
    const event = { id: `evt_wait_${orderId}`, type: "payment.succeeded", orderId, amount: 900, currency: "USD" };
    expect(await signed(event)).toMatchObject(inProgress);
    expect(await orderOf(orderId, "double-click")).toMatchObject({ status: "awaiting_payment", refundDue: false });

    // TIME TRAVEL: the window closes now (D1's deadline moved to D1's clock), rather than a
    // window short enough to close while this test works racing the test's own steps.
    await env.DB.prepare("UPDATE orders SET expires_at = CAST(unixepoch('subsec') * 1000 AS INTEGER) WHERE order_id = ?")
      .bind(internalId(orderId))
      .run();
    expect(await pay(orderId, "double-click", "tok_visa", "click-3")).toMatchObject({
      status: 409,
      body: { error: { code: "ORDER_NOT_PAYABLE", message: "the payment window has closed" } },
    });
    await runJobs([{ kind: "expire-orders", orderIds: [internalId(orderId)] }]);
    expect(await settledAs(orderId, "double-click", "expired")).toMatchObject({ refundDue: false });
    // The webhook's charge, delivered again, landed on an order that ended: owed back.
    expect(await signed(event)).toMatchObject({ status: 200, body: { outcome: "refund_due" } });
    expect(await orderOf(orderId, "double-click")).toMatchObject({ status: "expired", refundDue: true });
    expect(await attemptsOf(orderId)).toEqual({ "click-1": "charging" });
  });
});

describe("the payments webhook", () => {
  it("refuses bad signatures and old timestamps, ignores replays, and pays an order once", async () => {
    const sale = await createSale({ stock: 2, price: 700, paymentWindowSec: 600 });
    const orderId = await buy(sale.id, "hooked");
    await settledAs(orderId, "hooked", "awaiting_payment");
    const event = { id: `evt_${orderId}`, type: "payment.succeeded", orderId, amount: 700, currency: "USD" };
    const body = JSON.stringify(event);

    expect((await postWebhook(body, undefined)).status).toBe(401);
    expect((await postWebhook(body, await webhookSignature("not-the-secret", body))).status).toBe(401);
    const old = Math.floor(Date.now() / 1000) - 301;
    expect((await signed(event, old)).status).toBe(401);
    expect((await postWebhook(`${body} `, await webhookSignature(env.PAYMENT_WEBHOOK_SECRET as string, body))).status).toBe(401);
    expect((await orderOf(orderId, "hooked")).status).toBe("awaiting_payment"); // none of them changed anything

    expect(await signed({ ...event, id: "evt_unknown", orderId: "123456789012345678" })).toMatchObject({ status: 404 });
    expect(await signed(event)).toMatchObject({ status: 200, body: { outcome: "paid" } });
    expect(await signed(event)).toMatchObject({ status: 200, body: { outcome: "duplicate" } });
    expect(await orderOf(orderId, "hooked")).toMatchObject({ status: "paid", refundDue: false });
  });

  it("an event for the charge the pay route recorded is that charge again; another charge is owed a refund", async () => {
    const sale = await createSale({ stock: 2, price: 400, paymentWindowSec: 600 });
    const orderId = await buy(sale.id, "confirmed-twice");
    await settledAs(orderId, "confirmed-twice", "awaiting_payment");
    expect(await pay(orderId, "confirmed-twice", "tok_visa", "key-1")).toMatchObject({ status: 200 });
    const charge = await env.DB.prepare("SELECT provider_ref FROM payments WHERE order_id = ?")
      .bind(internalId(orderId))
      .first<{ provider_ref: string }>();
    expect(charge?.provider_ref).toMatch(/^dev_ch_/);
    const event = { type: "payment.succeeded", orderId, amount: 400, currency: "USD" };
    const same = await signed({ ...event, id: `evt_same_${orderId}`, paymentRef: charge?.provider_ref });
    expect(same).toMatchObject({ status: 200, body: { outcome: "paid" } });
    expect(await orderOf(orderId, "confirmed-twice")).toMatchObject({ status: "paid", refundDue: false });
    const other = await signed({ ...event, id: `evt_other_${orderId}`, paymentRef: "dev_ch_another" });
    expect(other).toMatchObject({ status: 200, body: { outcome: "refund_due" } });
    expect(await orderOf(orderId, "confirmed-twice")).toMatchObject({ status: "paid", refundDue: true });
  });

  it("records a payment for an order that already expired for refund, visibly", async () => {
    const sale = await createSale({ stock: 1, price: 300, paymentWindowSec: 1 });
    const orderId = await buy(sale.id, "tardy");
    await settledAs(orderId, "tardy", "expired");
    const late = await signed({ id: `evt_late_${orderId}`, type: "payment.succeeded", orderId, amount: 300, currency: "USD" });
    expect(late).toMatchObject({ status: 200, body: { outcome: "refund_due" } });
    expect(await orderOf(orderId, "tardy")).toMatchObject({ status: "expired", refundDue: true });
    const r = await report(sale.id);
    expect(r.refundsDue).toBe(1);
    expect(r.states.expired.orders).toBe(1);
  });
});
