// Payments racing for one order, on the whole local stack: the Worker on Miniflare with local
// D1 and Queues, a real redis-server behind the gateway, the dev payment provider. Each order
// is paid by several requests at once with different Idempotency-Keys (a double click in a
// page that makes a key per click, an app retrying with a fresh key): some cards declined,
// some provider calls never answered, some owners cancelling meanwhile, and for some orders an
// asynchronous provider reporting a charge of its own by webhook at the same time. Nothing is
// faked. The provider's own record (the dev provider keeps each charge in Redis by its
// idempotency key) and the webhooks sent are the ground truth the answers, D1 and the report
// are checked against.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ApiResult } from "../../dev/lib/api-client.ts";
import { orderIdCipher } from "../../dev/lib/order-ids.ts";
import { eventually } from "../../dev/lib/wait.ts";
import { webhookSignature } from "../../dev/lib/webhook-signing.ts";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";
import type { ReconciliationReport, WebhookReceived } from "../../src/shared/api-types.ts";

/** A provider call that never answers is given up after this long (503, its claim kept). */
const PAYMENT_TIMEOUT_MS = 2_000;

let stack: Stack;
let redis: Redis;

beforeAll(async () => {
  // One buyer's burst of payments is what is raced here, not the per-user limit (a burst of 10).
  stack = await startStack({ vars: { PAYMENT_TIMEOUT_MS: String(PAYMENT_TIMEOUT_MS), USER_RATE_LIMIT: "0" } });
  redis = new Redis(stack.redis.url);
});
afterAll(async () => {
  redis?.disconnect();
  await stack?.stop();
});

const ORDERS = 200;
const PRICE = 1_500;
/** Half the cards pay, three in ten are declined, one in five never gets an answer. */
const CARDS = [
  "tok_visa",
  "tok_chargeDeclined",
  "tok_visa",
  "tok_timeout",
  "tok_chargeDeclined",
  "tok_visa",
  "tok_visa",
  "tok_chargeDeclined",
  "tok_timeout",
  "tok_visa",
] as const;
/** 2 to 5 payments per order, their cards, and a cancel by the owner at the same time for one order in eight: fixed, so every run races the same. */
const attemptsOf = (i: number) =>
  Array.from({ length: 2 + ((i * 7919) % 4) }, (_, j) => ({
    key: `race-${i}-${j}`,
    card: CARDS[(i * 7 + j * 3) % CARDS.length] as string,
  }));
const cancelsToo = (i: number) => i % 8 === 0;
/** One order in five is also charged by an asynchronous provider, which reports it by webhook meanwhile. */
const chargedByWebhookToo = (i: number) => i % 5 === 2;

type Answer = ApiResult<unknown> & { key: string; card: string; round: 1 | 2 };

type Delivery = { status: number; code?: string; outcome?: WebhookReceived["outcome"] };

/**
 * Delivers the webhook event reporting the asynchronous provider's charge of `orderId`, as
 * signed by the provider, and again after a 503 as a provider does (on a busy machine the
 * Worker may not reach D1 or Redis in time): the event's id makes every delivery one.
 */
async function deliverCharge(orderId: string): Promise<Delivery> {
  for (let tries = 1; ; tries++) {
    const delivery = await deliverOnce(orderId);
    if (delivery.status !== 503 || tries === 10) return delivery;
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function deliverOnce(orderId: string): Promise<Delivery> {
  const body = JSON.stringify({ id: `evt_race_${orderId}`, type: "payment.succeeded", orderId, amount: PRICE, currency: "USD" });
  const res = await stack.api.fetch("/webhooks/payments", {
    method: "POST",
    headers: {
      "Content-Type": "application/json",
      "Webhook-Signature": await webhookSignature(stack.secrets.PAYMENT_WEBHOOK_SECRET, body),
    },
    body,
  });
  const answer = (await res.json()) as Partial<WebhookReceived> & { error?: { code: string } };
  return { status: res.status, code: answer.error?.code, outcome: answer.outcome };
}

/**
 * Pays order `i` with all its keys at once (and cancels it, or reports a webhook charge, for
 * some); then those told a payment was in progress try once more with their own key, once
 * every first answer is in: the order is paid by then, or its first payment was declined and
 * one of them may pay, or a payment whose outcome is unknown still holds it. A webhook told
 * so is delivered again after that, as a provider does.
 */
async function race(i: number, orderId: string, token: string) {
  const pay = ({ key, card }: { key: string; card: string }, round: 1 | 2): Promise<Answer> =>
    stack.api.pay(orderId, token, card, key).then((r) => ({ ...r, key, card, round }));
  const [first, cancel, delivered] = await Promise.all([
    Promise.all(attemptsOf(i).map((a) => pay(a, 1))),
    cancelsToo(i) ? stack.api.cancel(orderId, token) : undefined,
    chargedByWebhookToo(i) ? deliverCharge(orderId) : undefined,
  ]);
  const again = await Promise.all(first.filter((a) => a.code === "PAYMENT_IN_PROGRESS").map((a) => pay(a, 2)));
  const webhook = delivered?.code === "PAYMENT_IN_PROGRESS" ? await deliverCharge(orderId) : delivered;
  return { orderId, answers: [...first, ...again], cancel, webhook, webhookWaited: delivered?.code === "PAYMENT_IN_PROGRESS" };
}

interface OrderRow {
  order_id: string;
  status: string;
  refund_due: number;
  paid_ref: string | null;
  closed_at: number | null;
  payment_claim: string | null;
}
interface AttemptRow {
  order_id: string;
  idempotency_key: string;
  status: string;
  provider_ref: string | null;
  updated_at: number;
}
type Charge = { outcome: "succeeded"; providerRef: string } | { outcome: "declined"; reason: string };

async function d1State(saleId: string) {
  // One batch, so the orders and their attempts are read at one moment.
  const [orders, attempts] = (
    await stack.worker.d1([
      {
        sql: "SELECT order_id, status, refund_due, paid_ref, closed_at, payment_claim FROM orders WHERE sale_id = ?",
        params: [Number(saleId)],
      },
      {
        sql: `SELECT order_id, idempotency_key, status, provider_ref, updated_at FROM payments
            WHERE order_id IN (SELECT order_id FROM orders WHERE sale_id = ?)`,
        params: [Number(saleId)],
      },
    ])
  ).map((answer) => answer.results) as [OrderRow[], AttemptRow[]];
  // By the ids the buyers were given.
  const ids = orderIdCipher(stack.secrets.ORDER_ID_KEY);
  return {
    orders: new Map(orders.map((r) => [ids.toPublic(r.order_id), r])),
    attempts: new Map(attempts.map((r) => [`${ids.toPublic(r.order_id)}:${r.idempotency_key}`, r])),
  };
}

/** What the provider did for each (order, key): its charge or decline; absent when it never answered. */
async function providerRecord(keys: string[]): Promise<Map<string, Charge>> {
  // The provider was handed the internal id (the pay route's record of the order).
  const ids = orderIdCipher(stack.secrets.ORDER_ID_KEY);
  const values = await redis.mget(
    keys.map((k) => {
      const [orderId, key] = k.split(/:(.*)/s) as [string, string];
      return `devpay:{${ids.toInternal(orderId)}:${key}}`;
    }),
  );
  const record = new Map<string, Charge>();
  keys.forEach((k, i) => {
    const value = values[i];
    if (value) record.set(k, JSON.parse(value) as Charge);
  });
  return record;
}

/** The report once the queue has drained and every cancelled order's units are back. */
async function reconciled(saleId: string): Promise<ReconciliationReport> {
  let last: ReconciliationReport | undefined;
  return eventually(
    () => `sale ${saleId} to reconcile: ${JSON.stringify(last)}`,
    async () => {
      await stack.worker.scheduled();
      last = await stack.api.report(saleId);
      return last.reconciled && last.pending === 0 && last.returnsPending === 0 && last;
    },
    30_000,
  );
}

describe("payments racing for one order", () => {
  it("charges each of 200 orders once at most, owes a refund only where money was taken twice or after the order ended, and every answer agrees with D1", async () => {
    const sale = await stack.api.createSale({ stock: ORDERS, price: PRICE, paymentWindowSec: 600, name: "payment race" });
    const buyers = Array.from({ length: ORDERS }, (_, i) => `payrace-${sale.id}-${i}`);
    const tokens = await Promise.all(buyers.map((u) => stack.api.userToken(u)));
    const accepted = await Promise.all(tokens.map((t) => stack.api.checkout(sale.id, t)));
    expect(accepted.filter((a) => a.status !== 202)).toEqual([]);
    const orderIds = accepted.map((a) => a.orderId as string);
    await eventually(
      "every order to await payment in D1",
      async () => {
        const { orders } = await d1State(sale.id);
        return orders.size === ORDERS && [...orders.values()].every((o) => o.status === "awaiting_payment");
      },
      30_000,
    );

    const races = await Promise.all(orderIds.map((orderId, i) => race(i, orderId, tokens[i] as string)));

    const { orders, attempts } = await d1State(sale.id);
    const keysOf = (r: { orderId: string; answers: Answer[] }) =>
      r.answers.filter((a) => a.round === 1).map((a) => `${r.orderId}:${a.key}`);
    const provider = await providerRecord(races.flatMap(keysOf));
    let kept = 0;
    let owed = 0;
    let declinedThenPaid = 0;
    let webhooksWaited = 0;
    const tally = new Map<string, number>();
    for (const { orderId, answers, cancel, webhook, webhookWaited } of races) {
      const order = orders.get(orderId) as OrderRow;
      const charged = keysOf({ orderId, answers }).filter((k) => provider.get(k)?.outcome === "succeeded");
      // The invariant: the pay route charges an order once at most, whatever raced.
      expect(charged.length, `charges of ${orderId}`).toBeLessThanOrEqual(1);
      const charge = charged[0] === undefined ? undefined : attempts.get(charged[0]);
      // A charge whose attempt is still charging landed after the route gave up on the provider
      // (on a busy machine a card may take longer than PAYMENT_TIMEOUT_MS): its outcome is the
      // shop's to learn from a retry with its key, and until then its claim holds the order.
      const undecided = charge?.status === "charging";
      const last = new Map(answers.map((a) => [a.key, a]));
      // A claim still held is a timed-out attempt's: every other attempt released it as it ended.
      if (order.payment_claim !== null) expect(last.get(order.payment_claim)?.code, orderId).toBe("UNAVAILABLE");
      if (webhookWaited) webhooksWaited++;
      const count = (what: string) => tally.set(what, (tally.get(what) ?? 0) + 1);
      if (webhook) count(`webhook ${webhook.outcome ?? webhook.code}`);

      // Every charge decided is kept by the paid order, or owed back: a refund is due exactly
      // where money was taken twice, or after the order ended.
      const paidBy = order.status === "paid" ? order.paid_ref : null;
      if (charge && !undecided) {
        if (paidBy === `attempt:${charge.idempotency_key}`) expect(charge.status, orderId).toBe("succeeded");
        else {
          // Only the owner's cancel can have ended the order between the claim and the charge.
          expect({ order: order.status, attempt: charge.status }, orderId).toEqual({ order: "cancelled", attempt: "refund_due" });
          expect(charge.updated_at, `${orderId}'s charge was recorded after the order ended`).toBeGreaterThanOrEqual(
            order.closed_at as number,
          );
        }
      }
      if (webhook?.status === 200) {
        if (paidBy === `event:evt_race_${orderId}`) expect(webhook.outcome, orderId).toBe("paid");
        else {
          expect(webhook.outcome, orderId).toBe("refund_due");
          // Taken twice (the order was paid by the pay route's charge), or after the order ended.
          expect(paidBy?.startsWith("attempt:") || order.status === "cancelled", orderId).toBe(true);
        }
      } else if (webhook) {
        // Still waiting: a payment whose outcome is unknown holds the order (until its window closes).
        expect(webhook.code, orderId).toBe("PAYMENT_IN_PROGRESS");
        expect(order.status, orderId).toBe("awaiting_payment");
        expect(order.payment_claim, orderId).not.toBeNull();
      }
      const decided = (charge && !undecided ? 1 : 0) + (webhook?.status === 200 ? 1 : 0);
      if (paidBy) {
        expect(paidBy === `attempt:${charge?.idempotency_key}` || paidBy === `event:evt_race_${orderId}`, orderId).toBe(true);
        kept++;
      }
      const owesBack = decided > (paidBy ? 1 : 0);
      expect(order.refund_due, `${orderId}: ${decided} charges, paid by ${paidBy}`).toBe(owesBack ? 1 : 0);
      if (owesBack) owed++;
      if (order.status === "paid" && answers.some((a) => a.code === "PAYMENT_DECLINED")) declinedThenPaid++;

      // Each key's last answer agrees with D1 and with the provider.
      for (const a of last.values()) {
        const attempt = attempts.get(`${orderId}:${a.key}`);
        const record = provider.get(`${orderId}:${a.key}`);
        const what = `${orderId} ${a.key} (${a.card}, round ${a.round}): ${a.status} ${a.code ?? ""} ${a.message ?? ""}`;
        count(`${a.status} ${a.code ?? "paid"}`);
        if (a.status === 200) {
          expect(order.paid_ref, what).toBe(`attempt:${a.key}`);
          expect(attempt?.provider_ref, what).toBe(record?.outcome === "succeeded" && record.providerRef);
        } else if (a.code === "PAYMENT_DECLINED") {
          expect(attempt?.status, what).toBe("declined");
          expect(record?.outcome, what).toBe("declined");
        } else if (a.code === "UNAVAILABLE" && attempt === undefined) {
          // Refused before it began (on a busy machine the buyer's allowance may not be confirmed
          // by Redis in time, and the route fails closed): nothing charged, nothing held.
          expect({ heldByIt: order.payment_claim === a.key, record }, what).toEqual({ heldByIt: false, record: undefined });
        } else if (a.code === "UNAVAILABLE") {
          // Timed out: its outcome unknown, it keeps the order's claim (nothing else charged under it).
          expect({ attempt: attempt?.status, claim: order.payment_claim }, what).toEqual({ attempt: "charging", claim: a.key });
          if (a.card === "tok_timeout") expect(record, what).toBeUndefined();
        } else if (a.code === "PAYMENT_IN_PROGRESS") {
          expect(Number(a.headers.get("Retry-After")), what).toBeGreaterThanOrEqual(1);
          expect({ attempt, record }, what).toEqual({ attempt: undefined, record: undefined });
        } else if (a.message === "the order is already paid" || a.message === "the order was cancelled") {
          expect(order.status, what).toBe(a.message === "the order is already paid" ? "paid" : "cancelled");
          expect({ attempt, record }, what).toEqual({ attempt: undefined, record: undefined });
        } else {
          expect({ status: a.status, code: a.code, message: a.message }, what).toEqual({
            status: 409,
            code: "ORDER_NOT_PAYABLE",
            message: "the order ended before the payment completed; the charge will be refunded",
          });
          expect({ order: order.status, refund: order.refund_due, attempt: attempt?.status }, what).toEqual({
            order: "cancelled",
            refund: 1,
            attempt: "refund_due",
          });
        }
      }
      if (cancel) {
        if (cancel.status === 200) expect(order.status, orderId).toBe("cancelled");
        // Refused before it began, as a pay may be (the buyer's allowance not confirmed in time).
        else if (cancel.status === 503) expect(cancel.code, orderId).toBe("UNAVAILABLE");
        else
          expect({ code: cancel.code, order: order.status }, orderId).toEqual({ code: "ORDER_NOT_CANCELLABLE", order: "paid" });
      }
    }
    console.log(
      `payment race: ${kept} orders paid, ${owed} owed a refund, ${declinedThenPaid} paid after a decline, ${webhooksWaited} webhooks waited for a payment in flight; answers ${JSON.stringify(Object.fromEntries(tally))}`,
    );
    expect(kept, "no order was paid: the test did not pay").toBeGreaterThan(0);
    expect(tally.get("409 PAYMENT_IN_PROGRESS") ?? 0, "no payment met another in flight: the test did not race").toBeGreaterThan(
      0,
    );
    expect(declinedThenPaid, "no decline let another payment in").toBeGreaterThan(0);

    // The report's money figures agree: the orders that kept a charge, and those owed one back.
    const report = await reconciled(sale.id);
    expect(report.states.paid).toEqual({ orders: kept, units: kept });
    expect(report.refundsDue).toBe(owed);
    expect(report.oversold).toBe(0);
  });
});
