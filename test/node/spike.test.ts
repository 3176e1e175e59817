import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Stack, startStack, waitForDrain } from "../../dev/stack/local-stack.ts";

const USERS = 1_000;
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
 */
describe.each([1, 50, 300])("a spike on %i units", (stock) => {
  it(`sells exactly ${stock} units to distinct users out of ${2 * USERS} attempts`, async () => {
    const sale = await stack.api.createSale({ stock, name: `spike-${stock}` });
    const users = Array.from({ length: USERS }, (_, i) => `spike${stock}-user${i}`);
    const tokens = await Promise.all(users.map((u) => stack.api.userToken(u)));

    const results = await Promise.all(
      [...tokens, ...tokens].map(async (token, i) => ({
        user: users[i % USERS] as string,
        ...(await stack.api.checkout(sale.id, token)),
      })),
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
    expect(accepted.size).toBe(stock);
    expect(new Set(accepted.values()).size).toBe(stock);

    const report = await waitForDrain(stack.api, sale.id, stock);
    expect(report.redis.remaining).toBe(0);
    expect(report.redis.buyers).toBe(stock);
    expect(report.d1.confirmed).toBe(stock);
    expect(report.d1.soldCounter).toBe(stock);
    expect(report.oversold).toBe(0);
    expect(report.reconciled).toBe(true);

    // Exactly the accepted orders, each once, each to the user it was promised to.
    const rows = await stack.settledOrders(sale.id);
    expect(new Map(rows.map((r) => [r.userId, r.orderId]))).toEqual(accepted);
    expect(rows.length).toBe(stock);
  });
});
