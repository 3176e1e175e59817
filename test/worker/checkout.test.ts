import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { bucketKeys, saleKeys, saleStatsKey } from "../../src/shared/keys";
import { BASE, bearer, checkout, createSale, eventually, expectSettledInvariants, redis, userToken } from "./helpers";

const errorCode = async (res: Response) => ((await res.json()) as { error: { code: string } }).error.code;

describe("checkout", () => {
  it("accepts a buyer with 202 and a pending public order id (64-bit, 2^63 or more), then confirms it", async () => {
    const sale = await createSale({ stock: 3 });
    const res = await checkout(sale.id, await userToken("alice"));
    expect(res.status).toBe(202);
    const body = (await res.json()) as { orderId: string; status: string };
    expect(body.status).toBe("pending");
    expect(body.orderId).toMatch(/^[1-9][0-9]{18,19}$/);
    expect(BigInt(body.orderId) >= 2n ** 63n && BigInt(body.orderId) < 2n ** 64n).toBe(true);

    await expectSettledInvariants(sale.id, 3, new Map([["alice", body.orderId]]));
    const order = await SELF.fetch(`${BASE}/api/orders/${body.orderId}`, { headers: bearer(await userToken("alice")) });
    expect(order.status).toBe(200);
    expect(await order.json()).toMatchObject({ orderId: body.orderId, saleId: sale.id, userId: "alice", status: "confirmed" });
  });

  it("refuses a second purchase by the same user, with the first order's id", async () => {
    const sale = await createSale({ stock: 5 });
    const token = await userToken("bob");
    const first = (await (await checkout(sale.id, token)).json()) as { orderId: string };
    const second = await checkout(sale.id, token);
    expect(second.status).toBe(409);
    const body = (await second.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe("ALREADY_PURCHASED");
    expect(body.error.message).toContain(first.orderId);
    expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe("4");
  });

  it("answers SOLD_OUT once stock is gone", async () => {
    const sale = await createSale({ stock: 1 });
    expect((await checkout(sale.id, await userToken("first"))).status).toBe(202);
    const res = await checkout(sale.id, await userToken("second"));
    expect(res.status).toBe(409);
    expect(await errorCode(res)).toBe("SOLD_OUT");
  });

  it("answers a retry with the same Idempotency-Key with its order after the sale sold out, where the isolate knows it sold out", async () => {
    const sale = await createSale({ stock: 1 });
    const token = await userToken("lost-answer");
    const key = { headers: { "Idempotency-Key": `lost-answer-${sale.id}` } };
    const first = await checkout(sale.id, token, key);
    expect(first.status).toBe(202);
    const { orderId } = (await first.json()) as { orderId: string };
    // Another buyer is refused: this isolate now knows the sale sold out, and refuses
    // key-less checkouts from memory.
    expect(await errorCode(await checkout(sale.id, await userToken("too-late")))).toBe("SOLD_OUT");
    // The first buyer never saw the 202 (a timeout) and retries with its key: its order, not SOLD_OUT.
    const retry = await checkout(sale.id, token, key);
    expect(retry.status).toBe(202);
    expect(await retry.json()).toMatchObject({ orderId, status: "pending" });
    expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe("0");
  });

  it("refuses before the window opens and after it closes, reserving nothing", async () => {
    const upcoming = await createSale({
      startsAt: new Date(Date.now() + 3_600_000).toISOString(),
      endsAt: new Date(Date.now() + 7_200_000).toISOString(),
    });
    const early = await checkout(upcoming.id, await userToken("early"));
    expect(early.status).toBe(409);
    expect(await errorCode(early)).toBe("SALE_NOT_STARTED");

    const ended = await createSale({
      startsAt: new Date(Date.now() - 7_200_000).toISOString(),
      endsAt: new Date(Date.now() - 3_600_000).toISOString(),
    });
    const late = await checkout(ended.id, await userToken("late"));
    expect(late.status).toBe(409);
    expect(await errorCode(late)).toBe("SALE_ENDED");
    for (const id of [upcoming.id, ended.id]) {
      expect(await redis.hget(saleKeys(id).meta, "remaining")).toBe("10");
      expect(await redis.hlen(bucketKeys(id, 0, 1).buyers)).toBe(0);
    }
  });

  it("answers SALE_NOT_FOUND for an unknown sale and BAD_REQUEST for a malformed id", async () => {
    const token = await userToken("carol");
    const unknown = await checkout("999999999", token);
    expect(unknown.status).toBe(404);
    expect(await errorCode(unknown)).toBe("SALE_NOT_FOUND");
    // Asked again, the isolate answers from memory, and counts nothing: a probe of made-up
    // ids writes no keys (the counters would go out a second later).
    expect(await errorCode(await checkout("999999999", token))).toBe("SALE_NOT_FOUND");
    await new Promise((r) => setTimeout(r, 1_300));
    const minute = Math.floor(Date.now() / 60_000);
    expect(await redis.exists(saleStatsKey("999999999", minute), saleStatsKey("999999999", minute - 1))).toBe(0);
    const malformed = await checkout("abc", token);
    expect(malformed.status).toBe(400);
    expect(await errorCode(malformed)).toBe("BAD_REQUEST");
  });

  it("refuses missing, forged, expired and subject-less tokens with 401, reserving nothing", async () => {
    const sale = await createSale({ stock: 2 });
    const now = Math.floor(Date.now() / 1000);
    const { sign } = await import("hono/jwt");
    const cases: Record<string, Record<string, string>> = {
      missing: {},
      garbage: bearer("not-a-jwt"),
      forged: bearer(await userToken("mallory", { secret: "wrong-secret" })),
      expired: bearer(await sign({ sub: "mallory", exp: now - 60 }, env.JWT_SECRET, "HS256")), // beyond the 30 s skew
      "no expiry": bearer(await sign({ sub: "mallory" }, env.JWT_SECRET, "HS256")),
      "no subject": bearer(await sign({ exp: now + 60 }, env.JWT_SECRET, "HS256")),
    };
    for (const [name, headers] of Object.entries(cases)) {
      const res = await SELF.fetch(`${BASE}/api/sales/${sale.id}/checkout`, { method: "POST", headers });
      expect(res.status, name).toBe(401);
      expect(await res.json(), name).toEqual({ error: { code: "UNAUTHORIZED", message: expect.any(String) } });
    }
    expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe("2");
  });

  it("refuses a malformed body with 400 and reserves nothing; identity never comes from the body", async () => {
    const sale = await createSale({ stock: 2 });
    const token = await userToken("dave");
    const bad = await checkout(sale.id, token, { body: "{not json", headers: { "Content-Type": "application/json" } });
    expect(bad.status).toBe(400);
    expect(await errorCode(bad)).toBe("BAD_REQUEST");
    const array = await checkout(sale.id, token, { body: "[1]", headers: { "Content-Type": "application/json" } });
    expect(array.status).toBe(400);
    expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe("2");

    // A body naming a buyer is refused (the body has no such field), and reserves nothing.
    const spoof = await checkout(sale.id, token, {
      body: JSON.stringify({ userId: "eve" }),
      headers: { "Content-Type": "application/json" },
    });
    expect(spoof.status).toBe(400);
    expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe("2");
    expect(await redis.hget(bucketKeys(sale.id, 0, 1).buyers, "eve")).toBeNull();
    // The buyer is who the token says.
    expect((await checkout(sale.id, token)).status).toBe(202);
    expect(await redis.hget(bucketKeys(sale.id, 0, 1).buyers, "dave")).toBeTruthy();
    expect(await redis.hget(bucketKeys(sale.id, 0, 1).buyers, "eve")).toBeNull();
  });
});

describe("checkout when Redis lost a sale", () => {
  it("answers 503 instead of selling from nothing or pretending the sale does not exist, and the sale comes back by itself", async () => {
    const sale = await createSale({ stock: 2 });
    await redis.del(saleKeys(sale.id).meta); // as if Redis lost its data
    const res = await checkout(sale.id, await userToken("after-loss"));
    expect(res.status).toBe(503);
    expect(res.headers.get("Retry-After")).toBe("5");
    expect(await errorCode(res)).toBe("UNAVAILABLE");
    // The first checkout that met the loss reported it; the jobs queue rebuilt it from D1 (no
    // order of it ever reached D1: nothing to wait for). No admin call.
    const rebuilt = await eventually(
      "the sale to be rebuilt",
      async () => (await redis.hget(saleKeys(sale.id).meta, "remaining")) ?? undefined,
    );
    expect(Number(rebuilt)).toBe(2);
    expect((await checkout(sale.id, await userToken("after-heal"))).status).toBe(202);
  });
});
