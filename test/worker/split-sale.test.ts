// A sale split into buckets (src/shared/keys.ts): under a record limit small enough that a
// few dozen buyers need several keys, a sale sells, settles, returns, reports, restores and
// is edited the way a one-key sale is, and every buyer's records live in the buyer's bucket.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { ApiClient } from "../../dev/lib/api-client";
import { allBuckets, buyerKeys, saleKeys } from "../../src/shared/keys";
import { checkedFetch } from "./contract";
import { eventually, handleWithVars, internalId, redis, splitOf, waitForConfirmed } from "./helpers";

/** 10 KiB: a sale of 40 units needs 4 buckets (bucketsFor). */
const TIGHT = { REDIS_MAX_RECORD_BYTES: "10240", RESTORE_QUIET_MS: "0" };
const tight = new ApiClient({
  fetch: (path, init) => checkedFetch((req) => handleWithVars(TIGHT, req), `https://flash.test${path}`, init),
  adminToken: env.ADMIN_TOKEN,
  jwtSecret: env.JWT_SECRET,
});

const bucketsOf = async (saleId: string) => Number(await redis.hget(saleKeys(saleId).meta, "buckets"));
const buy = async (saleId: string, user: string, idempotencyKey?: string) => {
  const res = await tight.checkoutResponse(saleId, await tight.userToken(user), {
    headers: idempotencyKey ? { "Idempotency-Key": idempotencyKey } : {},
  });
  const body = (await res.json()) as { orderId?: string; error?: { code: string } };
  return { status: res.status, orderId: body.orderId, code: body.error?.code };
};

describe("a sale split into buckets", () => {
  it("sells, settles, returns, reports and restores with each buyer's records in the buyer's bucket", async () => {
    const sale = await tight.createSale({ stock: 40, paymentWindowSec: 600 });
    expect(await bucketsOf(sale.id)).toBe(4);
    const users = Array.from({ length: 30 }, (_, i) => `split-${i}`);
    const orders = new Map<string, string>();
    for (const user of users) {
      const answer = await buy(sale.id, user, `key-${user}`);
      expect(answer.status).toBe(202);
      orders.set(user, answer.orderId as string);
    }
    // A retry with its key gets its order; a second purchase is refused.
    expect(await buy(sale.id, "split-3", "key-split-3")).toMatchObject({ status: 202, orderId: orders.get("split-3") });
    expect(await buy(sale.id, "split-4")).toMatchObject({ status: 409, code: "ALREADY_PURCHASED" });
    await waitForConfirmed([...orders.values()]);

    const split = await splitOf(sale.id);
    expect(split).toMatchObject({ count: 4, key: expect.any(Array) });
    for (const user of users) {
      const own = buyerKeys(sale.id, user, split);
      // Redis keeps the internal ids.
      const orderId = internalId(orders.get(user) as string);
      expect(await redis.hget(own.buyers, user)).toBe(`1:${orderId}`);
      expect(await redis.hget(own.checkoutKeys, `${user}\nkey-${user}`)).toBe(`${orderId}:1`);
    }
    const perBucket = await Promise.all(allBuckets(sale.id, 4).map((b) => redis.hlen(b.buyers)));
    expect(perBucket.filter((n) => n > 0).length).toBeGreaterThan(1);

    // Settled: every outbox emptied; the report counts every bucket.
    const settled = await eventually("the outboxes to empty", async () => {
      const r = await tight.report(sale.id);
      return r.redis.outbox === 0 && r.pending === 0 && r;
    });
    expect(settled).toMatchObject({ reconciled: true, oversold: 0, redis: { buyers: 30, remaining: 10 } });

    // A cancel gives the unit back from the buyer's bucket, once.
    const leaver = "split-7";
    expect((await tight.cancel(orders.get(leaver) as string, await tight.userToken(leaver))).status).toBe(200);
    const back = await eventually("the cancelled unit to come back", async () => {
      const r = await tight.report(sale.id);
      return r.redis.returned === 1 && r;
    });
    expect(back.redis).toMatchObject({ buyers: 29, remaining: 11 });
    const leaverBucket = buyerKeys(sale.id, leaver, split);
    expect(await redis.sismember(leaverBucket.returned, internalId(orders.get(leaver) as string))).toBe(1);

    // Redis loses the sale: the restore puts every holder back in their bucket.
    const all = allBuckets(sale.id, 4).flatMap((b) => Object.values(b));
    await redis.del(saleKeys(sale.id).meta, saleKeys(sale.id).admission, ...all);
    const restored = await eventually("the restore", async () => {
      const res = await handleWithVars(
        TIGHT,
        new Request(`https://flash.test/admin/sales/${sale.id}/restore`, {
          method: "POST",
          headers: { Authorization: `Bearer ${env.ADMIN_TOKEN}` },
        }),
      );
      const loaded = res.status === 409 && ((await res.json()) as { error: { code: string } }).error.code === "SALE_LOADED";
      return (res.status === 200 || loaded) && res.status;
    });
    expect([200, 409]).toContain(restored);
    expect(await bucketsOf(sale.id)).toBe(4);
    for (const user of users.filter((u) => u !== leaver)) {
      expect(await redis.hget(buyerKeys(sale.id, user, split).buyers, user)).toBe(`1:${internalId(orders.get(user) as string)}`);
    }
    expect(await redis.sismember(leaverBucket.returned, internalId(orders.get(leaver) as string))).toBe(1);
    expect((await tight.report(sale.id)).redis).toMatchObject({ loaded: true, buyers: 29, remaining: 11, returned: 1 });
    expect(await buy(sale.id, "split-0")).toMatchObject({ status: 409, code: "ALREADY_PURCHASED" });
    expect((await buy(sale.id, leaver)).status).toBe(202);
  });

  it("recomputes the bucket count when stock grows before anyone can buy, never after", async () => {
    const later = new Date(Date.now() + 3_600_000);
    const upcoming = await tight.createSale({
      stock: 40,
      startsAt: later.toISOString(),
      endsAt: new Date(later.getTime() + 3_600_000).toISOString(),
    });
    expect(await bucketsOf(upcoming.id)).toBe(4);
    expect((await tight.editSale(upcoming.id, { stock: 80 })).status).toBe(200);
    expect(await bucketsOf(upcoming.id)).toBe(8);

    const live = await tight.createSale({ stock: 40 });
    expect((await buy(live.id, "early-bird")).status).toBe(202);
    expect((await tight.editSale(live.id, { stock: 80 })).status).toBe(200);
    // Its records already live in 4 buckets: the count stays, and the buyer is still found.
    expect(await bucketsOf(live.id)).toBe(4);
    expect(await redis.hget(buyerKeys(live.id, "early-bird", await splitOf(live.id)).buyers, "early-bird")).not.toBeNull();
    expect(await buy(live.id, "early-bird")).toMatchObject({ status: 409, code: "ALREADY_PURCHASED" });
  });
});
