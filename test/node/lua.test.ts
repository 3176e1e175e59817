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

// Script.exec: EVALSHA first, EVAL on NOSCRIPT, as the Worker runs it.
const checkout = (keys: ReturnType<typeof saleKeys>, user: string) =>
  redis.createScript<(string | number)[]>(lua("checkout")).exec([keys.meta, keys.buyers, keys.outbox, keys.admission], [user]);

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

describe("checkout.lua refusals before admission", () => {
  it("sold out and repeat buyers are answered as such, never 429, and spend no token", async () => {
    const { keys } = await newSale({ stock: 1, rate: 1, burst: 1 });
    expect((await checkout(keys, "only"))[0]).toBe("OK"); // takes the bucket's only token
    expect(await checkout(keys, "only")).toEqual(["ALREADY_PURCHASED", await redis.hget(keys.buyers, "only")]);
    expect(await checkout(keys, "late")).toEqual(["SOLD_OUT", 0]);
    const tokens = Number(await redis.hget(keys.admission, "tokens"));
    expect(tokens).toBeLessThan(1); // the refusals above took nothing from the bucket
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
