// The Lua scripts on a real redis-server, called the way the Worker calls them: through the
// project's Upstash gateway with @upstash/redis (EVALSHA, EVAL fallback).
import { readFileSync } from "node:fs";
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway } from "../../dev/gateway/server.ts";
import { type RedisServer, startRedisServer } from "../../dev/redis-server.ts";
import { decodeOrderId, ORDER_ID_EPOCH_SECONDS } from "../../src/orders/order-id.ts";
import { saleKeys } from "../../src/redis/keys.ts";

const lua = (name: string) => readFileSync(new URL(`../../lua/${name}.lua`, import.meta.url), "utf8");
const TOKEN = "lua-test-token";

let server: RedisServer;
let gateway: Gateway;
let redis: Redis;
let seq = 0;

beforeAll(async () => {
  server = await startRedisServer();
  gateway = await startGateway({ redisUrl: server.url, token: TOKEN });
  redis = new Redis({ url: gateway.url, token: TOKEN, automaticDeserialization: false, enableTelemetry: false });
});
afterAll(async () => {
  await gateway?.close();
  await server?.stop();
});

async function newSale(
  opts: { stock?: number; starts?: number; ends?: number; slot?: number; rate?: number; burst?: number } = {},
) {
  const id = String(++seq);
  const keys = saleKeys(id);
  const now = Date.now();
  const args = [
    opts.stock ?? 3,
    opts.starts ?? now - 1000,
    opts.ends ?? now + 60_000,
    opts.slot ?? 7,
    opts.rate ?? 1000,
    opts.burst ?? 1000,
    "t",
  ];
  expect(await redis.eval(lua("sale-init"), [keys.meta], args.map(String))).toBe(1);
  return { id, keys };
}

type Reply = (string | number)[];
// Script.exec: EVALSHA first, EVAL on NOSCRIPT, as the Worker runs it.
const checkoutAll = (keys: ReturnType<typeof saleKeys>, users: string[]) =>
  redis.createScript<Reply[]>(lua("checkout")).exec([keys.meta, keys.buyers, keys.outbox, keys.admission], users);
const checkout = async (keys: ReturnType<typeof saleKeys>, user: string) => {
  const replies = await checkoutAll(keys, [user]);
  expect(replies).toHaveLength(1);
  return replies[0] as Reply;
};

describe("checkout.lua", () => {
  it("reserves, records the buyer and the outbox, and mints a decodable id", async () => {
    const { keys } = await newSale({ slot: 4095 });
    await redis.hset(keys.meta, { seq: String(2 ** 20 - 1) }); // the sequence wraps inside the id
    const [timeBefore] = (await redis.time()) as [number, number];
    const [outcome, orderId, remaining] = await checkout(keys, "alice");
    expect(outcome).toBe("OK");
    expect(remaining).toBe(2);
    const parts = decodeOrderId(String(orderId));
    expect(parts.slot).toBe(4095);
    expect(parts.sequence).toBe(0);
    expect(parts.unixSeconds - timeBefore).toBeGreaterThanOrEqual(0);
    expect(parts.unixSeconds - timeBefore).toBeLessThanOrEqual(1);
    const expected = (BigInt(parts.unixSeconds - ORDER_ID_EPOCH_SECONDS) << 32n) | (4095n << 20n);
    expect(String(orderId)).toBe(expected.toString());
    expect(await redis.hget(keys.buyers, "alice")).toBe(orderId);
    expect(await redis.zrange(keys.outbox, 0, -1)).toEqual([`${orderId}:alice`]);
  });

  it("refuses a repeat buyer with the first order, then sells out", async () => {
    const { keys } = await newSale({ stock: 2 });
    const [, first] = await checkout(keys, "u1");
    expect(await checkout(keys, "u1")).toEqual(["ALREADY_PURCHASED", first]);
    expect((await checkout(keys, "u2"))[0]).toBe("OK");
    expect(await checkout(keys, "u3")).toEqual(["SOLD_OUT", 0]);
    expect(await redis.hget(keys.meta, "remaining")).toBe("0");
    expect(await redis.hlen(keys.buyers)).toBe(2);
  });

  it("answers the sale window and unknown sales without touching anything", async () => {
    const now = Date.now();
    const early = await newSale({ starts: now + 60_000, ends: now + 120_000 });
    expect(await checkout(early.keys, "x")).toEqual(["SALE_NOT_STARTED", now + 60_000]);
    const late = await newSale({ starts: now - 120_000, ends: now - 60_000 });
    expect(await checkout(late.keys, "x")).toEqual(["SALE_ENDED", now - 60_000]);
    expect(await checkout(saleKeys("404"), "x")).toEqual(["SALE_NOT_FOUND"]);
    for (const s of [early, late]) {
      expect(await redis.hget(s.keys.meta, "remaining")).toBe("3");
      expect(await redis.exists(s.keys.buyers, s.keys.outbox, s.keys.admission)).toBe(0);
    }
  });

  it("admits no faster than the sale's token bucket", async () => {
    const { keys } = await newSale({ stock: 100, rate: 1, burst: 2 });
    expect((await checkout(keys, "a"))[0]).toBe("OK");
    expect((await checkout(keys, "b"))[0]).toBe("OK");
    const [outcome, retryAfterMs, burst, rate] = await checkout(keys, "c");
    expect(outcome).toBe("RATE_LIMITED");
    expect(Number(retryAfterMs)).toBeGreaterThan(0);
    expect(Number(retryAfterMs)).toBeLessThanOrEqual(1000);
    expect([burst, rate]).toEqual([2, 1]);
    expect(await redis.hget(keys.buyers, "c")).toBeNull();
  });
});

describe("checkout.lua with a batch of buyers", () => {
  it("serves buyers in order, each seeing what the ones before took", async () => {
    const { keys } = await newSale({ stock: 3 });
    const held = (await checkout(keys, "early"))[1];
    const replies = await checkoutAll(keys, ["a", "early", "b", "a", "c", "d"]);
    expect(replies.map((r) => r[0])).toEqual(["OK", "ALREADY_PURCHASED", "OK", "ALREADY_PURCHASED", "SOLD_OUT", "SOLD_OUT"]);
    const [a, early, b, again] = replies as [Reply, Reply, Reply, Reply];
    expect(early[1]).toBe(held);
    expect(again[1]).toBe(a[1]); // the double click in one batch gets the order of the first
    expect([a[2], b[2]]).toEqual([1, 0]); // remaining after each reservation
    expect(await redis.hget(keys.meta, "remaining")).toBe("0");
    expect(await redis.hget(keys.meta, "seq")).toBe("3");
    expect(await redis.hgetall(keys.buyers)).toEqual(["early", held, "a", a[1], "b", b[1]]);
    expect((await redis.zrange(keys.outbox, 0, -1)).sort()).toEqual([`${held}:early`, `${a[1]}:a`, `${b[1]}:b`].sort());
    expect(new Set([held, a[1], b[1]]).size).toBe(3);
  });

  it("stops admitting mid-batch when the bucket runs dry, and spends only what it reserved", async () => {
    const { keys } = await newSale({ stock: 100, rate: 1, burst: 2 });
    const replies = await checkoutAll(keys, ["a", "b", "c", "d"]);
    expect(replies.map((r) => r[0])).toEqual(["OK", "OK", "RATE_LIMITED", "RATE_LIMITED"]);
    expect(await redis.hget(keys.meta, "remaining")).toBe("98");
    expect(await redis.hlen(keys.buyers)).toBe(2);
    expect(Number(await redis.hget(keys.admission, "tokens"))).toBeLessThan(1);
  });

  it("refuses an empty batch and one over 100 buyers, writing nothing", async () => {
    const { keys } = await newSale({ stock: 500 });
    await expect(checkoutAll(keys, [])).rejects.toThrow(/1 to 100 user ids/);
    await expect(
      checkoutAll(
        keys,
        Array.from({ length: 101 }, (_, i) => `u${i}`),
      ),
    ).rejects.toThrow(/1 to 100 user ids/);
    expect(await redis.hget(keys.meta, "remaining")).toBe("500");
    expect(await redis.exists(keys.buyers)).toBe(0);
  });

  it("gives every buyer the sale-wide refusal and writes nothing", async () => {
    const now = Date.now();
    const late = await newSale({ starts: now - 120_000, ends: now - 60_000 });
    expect(await checkoutAll(late.keys, ["x", "y"])).toEqual([
      ["SALE_ENDED", now - 60_000],
      ["SALE_ENDED", now - 60_000],
    ]);
    expect(await checkoutAll(saleKeys("405"), ["x", "y"])).toEqual([["SALE_NOT_FOUND"], ["SALE_NOT_FOUND"]]);
    expect(await redis.exists(late.keys.buyers, late.keys.outbox, late.keys.admission)).toBe(0);
  });
});

describe("checkout.lua refusals before admission", () => {
  it("sold out and repeat buyers are answered as such, never 429, and spend no token", async () => {
    const { keys } = await newSale({ stock: 1, rate: 1, burst: 1 });
    expect((await checkout(keys, "only"))[0]).toBe("OK"); // takes the bucket's only token
    const bucket = await redis.hgetall(keys.admission);
    expect(await checkout(keys, "only")).toEqual(["ALREADY_PURCHASED", await redis.hget(keys.buyers, "only")]);
    expect(await checkout(keys, "late")).toEqual(["SOLD_OUT", 0]);
    expect(await redis.hgetall(keys.admission)).toEqual(bucket); // the refusals did not touch the bucket
  });
});

describe("release.lua and sale-init.lua", () => {
  it("release returns the unit once, and frees the buyer to try again", async () => {
    const { keys } = await newSale({ stock: 1 });
    const [, orderId] = await checkout(keys, "bob");
    const release = () => redis.eval(lua("release"), [keys.meta, keys.buyers, keys.outbox], [String(orderId), "bob"]);
    expect(await release()).toBe(1);
    expect(await release()).toBe(0);
    expect(await redis.hget(keys.meta, "remaining")).toBe("1");
    expect(await redis.zcard(keys.outbox)).toBe(0);
    const [again, newOrder] = await checkout(keys, "bob");
    expect(again).toBe("OK");
    expect(newOrder).not.toBe(orderId);
  });

  it("release leaves a different order of the same user alone", async () => {
    const { keys } = await newSale({ stock: 2 });
    await checkout(keys, "carol");
    expect(await redis.eval(lua("release"), [keys.meta, keys.buyers, keys.outbox], ["123", "carol"])).toBe(0);
    expect(await redis.hget(keys.meta, "remaining")).toBe("1");
  });

  it("sale-init never resets a live sale", async () => {
    const { keys } = await newSale({ stock: 5 });
    await checkout(keys, "dave");
    expect(await redis.eval(lua("sale-init"), [keys.meta], ["5", "0", "1", "0", "1", "1", "t"])).toBe(0);
    expect(await redis.hget(keys.meta, "remaining")).toBe("4");
  });
});
