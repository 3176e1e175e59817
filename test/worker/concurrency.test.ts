import { describe, expect, it } from "vitest";
import { saleKeys } from "../../src/redis/keys";
import { checkout, createSale, expectSettledInvariants, redis, userToken } from "./helpers";

const USERS = 200;

/**
 * A crowd of USERS, each trying twice, all at once: 2 * USERS concurrent checkouts.
 * Asserts the invariants: exactly min(stock, USERS) distinct buyers, nobody twice,
 * Redis stock at 0 when sold out, and every 202 confirmed exactly once in D1.
 */
describe.each([1, 50, 300])("a spike of %i units", (stock) => {
  it(`sells exactly ${stock} units to ${stock} distinct users out of ${2 * USERS} attempts`, async () => {
    const sale = await createSale({ stock, name: `spike-${stock}` });
    const users = Array.from({ length: USERS }, (_, i) => `spike${stock}-user${i}`);
    const tokens = await Promise.all(users.map((u) => userToken(u)));

    const attempts = [...tokens, ...tokens].map((token, i) =>
      checkout(sale.id, token).then(async (res) => ({
        user: users[i % USERS] as string,
        status: res.status,
        body: await res.json(),
      })),
    );
    const results = await Promise.all(attempts);

    const accepted = new Map<string, string>();
    for (const r of results) {
      if (r.status === 202) {
        expect(accepted.has(r.user), `${r.user} bought twice`).toBe(false);
        accepted.set(r.user, (r.body as { orderId: string }).orderId);
      } else {
        expect(r.status).toBe(409);
        expect(["SOLD_OUT", "ALREADY_PURCHASED"]).toContain((r.body as { error: { code: string } }).error.code);
      }
    }
    expect(accepted.size).toBe(Math.min(stock, USERS));
    expect(new Set(accepted.values()).size).toBe(accepted.size);
    expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe(String(stock - accepted.size));

    await expectSettledInvariants(sale.id, stock, accepted);
  });
});
