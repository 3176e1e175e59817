import { setTimeout } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";

const USERS = 1_000;

/** Retry-After's seconds (one when the answer had none), plus up to a second so retries spread. */
const retryDelayMs = (headers: Headers | undefined) => 1000 * Number(headers?.get("Retry-After") ?? 1) + Math.random() * 1000;

let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
});

/**
 * A crowd of USERS, each trying twice, all at once: 2,000 concurrent checkouts against the
 * Worker on Miniflare, a real redis-server behind the gateway, local D1 and Queues.
 * Ends by asserting the invariants: exactly min(stock, USERS) distinct buyers, nobody
 * twice, Redis stock at 0 when sold out, and every 202 confirmed exactly once in D1.
 * An attempt that waits past its bound in the stampede (a loaded machine) answers 503: it
 * fails closed, and the buyer sends it again as the API asks (after Retry-After), as often as
 * it takes. Sent again at once, the 503s fed the stampede that caused them: in one run beside
 * two CPU-burning processes the spikes took 153 s, against about 60 s in others.
 */
describe.each([1, 50, 300])("a spike on %i units", (stock) => {
  it(`sells exactly ${stock} units to distinct users out of ${2 * USERS} attempts`, async () => {
    const sale = await stack.api.createSale({ stock, name: `spike-${stock}` });
    const users = Array.from({ length: USERS }, (_, i) => `spike${stock}-user${i}`);
    const tokens = await Promise.all(users.map((u) => stack.api.userToken(u)));

    /** Users one of whose attempts answered 503: that attempt may have reserved a unit. */
    const retried = new Set<string>();
    const results = await Promise.all(
      [...tokens, ...tokens].map(async (token, i) => {
        const user = users[i % USERS] as string;
        // Sent again after a 503 (or a connection the loaded machine dropped, status 0) until
        // answered: bounded by the test's own timeout, not by a count a slow machine exhausts.
        for (;;) {
          const answer = await stack.api.checkout(sale.id, token);
          if (answer.status !== 503 && answer.status !== 0) return { user, ...answer };
          retried.add(user);
          await setTimeout(retryDelayMs(answer.headers));
        }
      }),
    );

    const accepted = new Map<string, string>();
    for (const r of results) {
      if (r.status === 202) {
        expect(accepted.has(r.user), `${r.user} bought twice`).toBe(false);
        accepted.set(r.user, r.orderId as string);
      } else {
        expect(r.status).toBe(409);
        expect(["SOLD_OUT", "ALREADY_PURCHASED"]).toContain(r.code);
      }
    }
    expect(accepted.size).toBeLessThanOrEqual(stock);
    expect(new Set(accepted.values()).size).toBe(accepted.size);

    const report = await stack.drain(sale.id, stock);
    expect(report.redis.remaining).toBe(0);
    expect(report.redis.buyers).toBe(stock);
    expect(report.d1.confirmed).toBe(stock);
    expect(report.d1.soldCounter).toBe(stock);
    expect(report.oversold).toBe(0);
    expect(report.reconciled).toBe(true);

    // Exactly the stock, each unit once, one order per user: every accepted order to the user it
    // was promised to, and any other only to a user whose 503 reserved it (told
    // ALREADY_PURCHASED on the retry).
    const rows = await stack.settledOrders(sale.id);
    const settled = new Map(rows.map((r) => [r.userId, r.orderId]));
    expect(rows.length).toBe(stock);
    expect(settled.size).toBe(stock);
    for (const [user, orderId] of accepted) expect(settled.get(user), user).toBe(orderId);
    for (const user of settled.keys())
      if (!accepted.has(user)) expect(retried.has(user), `${user} holds an order no answer gave`).toBe(true);
  });
});
