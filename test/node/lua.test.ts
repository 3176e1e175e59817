// The Lua scripts on a real redis-server, called the way the Worker calls them: through the
// project's Upstash gateway with @upstash/redis (EVALSHA, EVAL fallback).
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway } from "../../dev/gateway/server.ts";
import { type RedisServer, startRedisServer } from "../../dev/lib/redis-server.ts";
import { eventually } from "../../dev/lib/wait.ts";
import { parseCheckoutReply, ReplyLayoutError, type Reservation } from "../../src/shared/checkout-reply.ts";
import {
  allBuckets,
  type BucketKeys,
  bucketKeyOf,
  bucketKeys,
  bucketOf,
  buyerKeys,
  checkoutScriptKeys,
  parsePendingRecord,
  saleKeys,
} from "../../src/shared/keys.ts";
import { BLOOM } from "../../src/shared/limits.ts";
import { decodeOrderId, ID_INDEXES, ORDER_ID_EPOCH_MS } from "../../src/shared/order-id.ts";

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

/** A sale of one bucket: its per-buyer keys keep the names they had before sales were split. */
const oneBucketKeys = (id: string) => ({ ...saleKeys(id), ...bucketKeys(id, 0, 1) });

async function newSale(
  opts: { stock?: number; starts?: number; ends?: number; slot?: number; rate?: number; burst?: number; limit?: number } = {},
) {
  const id = String(++seq);
  const keys = oneBucketKeys(id);
  const now = Date.now();
  const args = [
    1,
    opts.stock ?? 3,
    opts.starts ?? now - 1000,
    opts.ends ?? now + 60_000,
    opts.slot ?? 7,
    opts.rate ?? 1000,
    opts.burst ?? 1000,
    "t",
    opts.limit ?? 1,
    "active",
    // No waiting room (test/node/waiting-room-lua.test.ts tests one).
    "off",
    0,
    1,
    30,
    1, // one bucket
    0, // not a draw
    "", // no lanes
    "",
  ];
  expect(await sync(keys, args)).toBe(1);
  return { id, keys };
}

const sync = (keys: { meta: string }, args: (string | number)[]) =>
  redis.createScript<unknown>(lua("sale-sync")).exec([keys.meta], args.map(String));

// Script.exec: EVALSHA first, EVAL on NOSCRIPT, as the Worker runs it; the reply read by the
// Worker's own parser, which checks its layout.
type Keys = ReturnType<typeof oneBucketKeys>;
const statsKey = (keys: Keys) => keys.meta.replace(":meta", ":stats:test");
/**
 * Buyers as "user" (one unit), ["user", units], ["user", units, Idempotency-Key] or ["user",
 * units, Idempotency-Key, traceparent]; units a quantity, or "<quantity>@<variant>" for a sale
 * with variants.
 */
type Buyer = string | [string, number | string] | [string, number | string, string] | [string, number | string, string, string];
const checkoutRaw = (keys: Keys, buyers: Buyer[]) =>
  redis.createScript<unknown>(lua("checkout")).exec(
    [
      keys.meta,
      keys.admission,
      statsKey(keys),
      keys.queue.counters,
      keys.buyers,
      keys.outbox,
      keys.pending,
      keys.checkoutKeys,
      keys.passes,
      keys.live,
    ],
    // Split by one bucket; every buyer's is the call's first.
    // No access codes (test/node/lane-lines-lua.test.ts and test/worker/lanes.test.ts test them), no lane's line.
    [
      "1",
      "0",
      "",
      ...buyers.flatMap((b) =>
        typeof b === "string" ? [b, "1", "", "", "1", "", ""] : [b[0], String(b[1]), b[2] ?? "", "", "1", "", b[3] ?? ""],
      ),
    ],
  );
const checkoutAll = async (keys: Keys, buyers: Buyer[]) => {
  const reply = parseCheckoutReply(await checkoutRaw(keys, buyers), buyers.length);
  if (!reply.reservations) throw new Error(`split by another bucket count than the sale's ${reply.buckets}`);
  return reply.reservations;
};
const checkout = async (keys: Keys, buyer: Buyer) => {
  const replies = await checkoutAll(keys, [buyer]);
  expect(replies).toHaveLength(1);
  return replies[0] as Reservation;
};
const returnUnits = (keys: Keys, orderId: string, user: string, quantity = 1) =>
  redis.eval(
    lua("return"),
    [keys.meta, keys.buyers, keys.outbox, keys.pending, keys.returned],
    [orderId, user, String(quantity), "1"],
  );
const orderOf = (r: Reservation) => ("orderId" in r ? r.orderId : undefined);
/** Redis' clock, in ms. */
const redisMs = async () => {
  const [seconds, micros] = await redis.time();
  return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
};

describe("checkout.lua", () => {
  it("reserves, records the buyer and the outbox, and mints a decodable id", async () => {
    const { keys } = await newSale({ slot: 4095 });
    await redis.hset(keys.meta, { seq: "41" });
    const timeBefore = await redisMs();
    const reply = await checkout(keys, "alice");
    const timeAfter = await redisMs();
    expect(reply).toMatchObject({
      code: "OK",
      remaining: 2,
      admission: { rate: 1000, burst: 1000 },
      held: 1,
      limit: 1,
      repeated: false,
      sequence: 42, // the sale's order sequence, counted on, in the reply (not in the id)
    });
    const orderId = orderOf(reply);
    const parts = decodeOrderId(String(orderId));
    expect(parts).toMatchObject({ slot: 4095, index: 0 });
    // Minted from Redis' own clock, between the two TIME reads around the call.
    expect(parts.unixMs).toBeGreaterThanOrEqual(timeBefore);
    expect(parts.unixMs).toBeLessThanOrEqual(timeAfter);
    const expected = (BigInt(parts.unixMs - ORDER_ID_EPOCH_MS) << 22n) | (4095n << 10n);
    expect(String(orderId)).toBe(expected.toString());
    // Above every id the earlier layout (seconds since 2026-01-01 << 32 | slot << 20 | sequence) minted until now.
    const earlierLayoutCeiling = BigInt(Math.floor(timeAfter / 1000) - 1_767_225_600 + 1) << 32n;
    expect(BigInt(String(orderId)) > earlierLayoutCeiling).toBe(true);
    expect(await redis.hget(keys.buyers, "alice")).toBe(`1:${orderId}`);
    expect(await redis.zrange(keys.outbox, 0, -1)).toEqual([orderId]);
    expect(await redis.hget(keys.pending, String(orderId))).toBe("1:alice");
  });

  it("keeps the buyer's traceparent in the outbox record, where the re-drive reads it", async () => {
    const { keys } = await newSale({ stock: 5, limit: 2 });
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    const [traced, untraced] = await checkoutAll(keys, [["alice", 1, "", traceparent], "bob"]);
    const record = await redis.hget<string>(keys.pending, String(orderOf(traced as Reservation)));
    expect(record).toBe(`1|${traceparent}:alice`);
    expect(parsePendingRecord(String(record))).toEqual({ quantity: 1, variant: "default", userId: "alice", traceparent });
    // A buyer without one gets the record orders had before traces.
    expect(await redis.hget(keys.pending, String(orderOf(untraced as Reservation)))).toBe("1:bob");
    // With a presale lane's code too, each field is told apart by their count.
    const code = "0123456789abcdef0123456789abcdef";
    expect(parsePendingRecord(`2@eu-41|early|${code}|${traceparent}:a:b`)).toEqual({
      quantity: 2,
      variant: "eu-41",
      userId: "a:b",
      lane: "early",
      accessCode: code,
      traceparent,
    });
    expect(parsePendingRecord(`2@eu-41|early|${code}:a`)).toEqual({
      quantity: 2,
      variant: "eu-41",
      userId: "a",
      lane: "early",
      accessCode: code,
    });
  });

  it("numbers a sale's ids on its clock: never behind the last id's millisecond, at most ID_INDEXES in one", async () => {
    const { keys } = await newSale({ stock: 5, limit: 1 });
    // The last id was minted a minute ahead of Redis' clock now (as if that clock stepped back),
    // and took the millisecond's last index but two.
    const lastMs = (await redisMs()) - ORDER_ID_EPOCH_MS + 60_000;
    await redis.hset(keys.meta, { idms: String(lastMs), idn: String(ID_INDEXES - 3) });
    const replies = await checkoutAll(keys, ["c1", "c2", "c3"]);
    expect(replies.map((r) => r.code)).toEqual(["OK", "OK", "RATE_LIMITED"]);
    expect(replies.slice(0, 2).map((r) => decodeOrderId(String(orderOf(r))))).toEqual([
      { unixMs: lastMs + ORDER_ID_EPOCH_MS, slot: 7, index: ID_INDEXES - 2 },
      { unixMs: lastMs + ORDER_ID_EPOCH_MS, slot: 7, index: ID_INDEXES - 1 },
    ]);
    // The third would need a later millisecond than Redis' clock has shown: retry in one.
    expect(replies[2]).toMatchObject({ code: "RATE_LIMITED", retryAfterMs: 1 });
    expect(await redis.hget(keys.buyers, "c3")).toBeNull();
    expect(await redis.hmget(keys.meta, "remaining", "seq", "idms", "idn")).toEqual([
      "3",
      "2",
      String(lastMs),
      String(ID_INDEXES - 1),
    ]);
  });

  it("a Redis gone back reports a sequence not above the one lost, and mints no id it lost", async () => {
    const { keys } = await newSale({ stock: 20, limit: 1 });
    await checkoutAll(keys, ["before-1", "before-2"]);
    const hash = async (key: string) => {
      const flat = (await redis.hgetall(key)) as unknown as string[]; // field, value, field, value...
      return Object.fromEntries(flat.flatMap((field, i) => (i % 2 === 0 ? [[field, flat[i + 1]]] : [])));
    };
    const [meta, buyers] = await Promise.all([hash(keys.meta), hash(keys.buyers)]);
    const lost = await checkoutAll(keys, ["lost-1", "lost-2", "lost-3"]);
    const lostIds = lost.map((r) => String(orderOf(r)));
    // Redis comes back from the copy: the writes after it are gone; its clock has moved on
    // (a restart takes longer than the millisecond the lost ids carry).
    await redis.del(keys.meta, keys.buyers);
    await redis.hset(keys.meta, meta);
    await redis.hset(keys.buyers, buyers);
    const lastLostMs = Math.max(...lostIds.map((id) => decodeOrderId(id).unixMs));
    await eventually("Redis' clock past the lost ids", async () => (await redisMs()) > lastLostMs, 5_000);
    const again = await checkoutAll(keys, ["lost-1", "lost-2", "lost-3"]);
    expect(again.map((r) => r.code)).toEqual(["OK", "OK", "OK"]);
    const sequenceOf = (r: Reservation) => (r.code === "OK" ? r.sequence : undefined);
    expect(sequenceOf(lost[2] as Reservation)).toBe(5);
    expect(sequenceOf(again[0] as Reservation)).toBe(5); // not above the one lost: the isolate's detector sees it
    for (const id of again.map((r) => String(orderOf(r)))) expect(lostIds).not.toContain(id);
  });

  it("refuses a repeat buyer with the first order, then sells out", async () => {
    const { keys } = await newSale({ stock: 2 });
    const first = orderOf(await checkout(keys, "u1"));
    expect(await checkout(keys, "u1")).toEqual({ code: "ALREADY_PURCHASED", orderId: first });
    expect((await checkout(keys, "u2")).code).toBe("OK");
    expect(await checkout(keys, "u3")).toEqual({ code: "SOLD_OUT" });
    expect(await redis.hget(keys.meta, "remaining")).toBe("0");
    expect(await redis.hlen(keys.buyers)).toBe(2);
  });

  it("answers the sale window and unknown sales without touching anything", async () => {
    const now = Date.now();
    const early = await newSale({ starts: now + 60_000, ends: now + 120_000 });
    expect(await checkout(early.keys, "x")).toEqual({ code: "SALE_NOT_STARTED", startsAt: now + 60_000 });
    const late = await newSale({ starts: now - 120_000, ends: now - 60_000 });
    expect(await checkout(late.keys, "x")).toEqual({ code: "SALE_ENDED", endsAt: now - 60_000 });
    expect(await checkout(oneBucketKeys("404"), "x")).toEqual({ code: "SALE_NOT_FOUND" });
    for (const s of [early, late]) {
      expect(await redis.hget(s.keys.meta, "remaining")).toBe("3");
      expect(await redis.exists(s.keys.buyers, s.keys.outbox, s.keys.admission)).toBe(0);
    }
  });

  it("admits no faster than the sale's token bucket", async () => {
    const { keys } = await newSale({ stock: 100, rate: 1, burst: 2 });
    expect((await checkout(keys, "a")).code).toBe("OK");
    expect((await checkout(keys, "b")).code).toBe("OK");
    const limited = await checkout(keys, "c");
    if (limited.code !== "RATE_LIMITED") throw new Error(`expected RATE_LIMITED, got ${limited.code}`);
    expect(limited.retryAfterMs).toBeGreaterThan(0);
    expect(limited.retryAfterMs).toBeLessThanOrEqual(1000);
    expect(limited.admission).toEqual({ rate: 1, burst: 2 });
    expect(await redis.hget(keys.buyers, "c")).toBeNull();
  });
});

describe("checkout.lua with a batch of buyers", () => {
  it("serves buyers in order, each seeing what the ones before took", async () => {
    const { keys } = await newSale({ stock: 3 });
    const held = orderOf(await checkout(keys, "early"));
    const replies = await checkoutAll(keys, ["a", "early", "b", "a", "c", "d"]);
    expect(replies.map((r) => r.code)).toEqual(["OK", "ALREADY_PURCHASED", "OK", "ALREADY_PURCHASED", "SOLD_OUT", "SOLD_OUT"]);
    const [a, early, b, again] = replies as [Reservation, Reservation, Reservation, Reservation];
    expect(orderOf(early)).toBe(held);
    expect(orderOf(again)).toBe(orderOf(a)); // the double click in one batch gets the order of the first
    expect([a, b].map((r) => ("remaining" in r ? r.remaining : undefined))).toEqual([1, 0]); // remaining after each reservation
    expect(await redis.hget(keys.meta, "remaining")).toBe("0");
    expect(await redis.hget(keys.meta, "seq")).toBe("3");
    expect(await redis.hgetall(keys.buyers)).toEqual(["early", `1:${held}`, "a", `1:${orderOf(a)}`, "b", `1:${orderOf(b)}`]);
    expect((await redis.zrange(keys.outbox, 0, -1)).sort()).toEqual([held, orderOf(a), orderOf(b)].sort());
    expect(new Set([held, orderOf(a), orderOf(b)]).size).toBe(3);
  });

  it("stops admitting mid-batch when the bucket runs dry, and spends only what it reserved", async () => {
    const { keys } = await newSale({ stock: 100, rate: 1, burst: 2 });
    const replies = await checkoutAll(keys, ["a", "b", "c", "d"]);
    expect(replies.map((r) => r.code)).toEqual(["OK", "OK", "RATE_LIMITED", "RATE_LIMITED"]);
    expect(await redis.hget(keys.meta, "remaining")).toBe("98");
    expect(await redis.hlen(keys.buyers)).toBe(2);
    expect(Number(await redis.hget(keys.admission, "tokens"))).toBeLessThan(1);
  });

  it("refuses an empty batch and one over 100 buyers, writing nothing", async () => {
    const { keys } = await newSale({ stock: 500 });
    await expect(checkoutRaw(keys, [])).rejects.toThrow(/1 to 100 septuples/);
    await expect(
      checkoutRaw(
        keys,
        Array.from({ length: 101 }, (_, i) => `u${i}`),
      ),
    ).rejects.toThrow(/1 to 100 septuples/);
    expect(await redis.hget(keys.meta, "remaining")).toBe("500");
    expect(await redis.exists(keys.buyers)).toBe(0);
  });

  it("gives every buyer the sale-wide refusal and writes nothing", async () => {
    const now = Date.now();
    const late = await newSale({ starts: now - 120_000, ends: now - 60_000 });
    expect(await checkoutAll(late.keys, ["x", "y"])).toEqual([
      { code: "SALE_ENDED", endsAt: now - 60_000 },
      { code: "SALE_ENDED", endsAt: now - 60_000 },
    ]);
    expect(await checkoutAll(oneBucketKeys("405"), ["x", "y"])).toEqual([{ code: "SALE_NOT_FOUND" }, { code: "SALE_NOT_FOUND" }]);
    expect(await redis.exists(late.keys.buyers, late.keys.outbox, late.keys.admission)).toBe(0);
  });
});

describe("checkout.lua refusals before admission", () => {
  it("sold out and repeat buyers are answered as such, never 429, and spend no token", async () => {
    const { keys } = await newSale({ stock: 1, rate: 1, burst: 1 });
    expect((await checkout(keys, "only")).code).toBe("OK"); // takes the bucket's only token
    const bucket = await redis.hgetall(keys.admission);
    const held = String(await redis.hget(keys.buyers, "only")).split(":")[1];
    expect(await checkout(keys, "only")).toEqual({ code: "ALREADY_PURCHASED", orderId: held });
    expect(await checkout(keys, "late")).toEqual({ code: "SOLD_OUT" });
    expect(await redis.hgetall(keys.admission)).toEqual(bucket); // the refusals did not touch the bucket
  });
});

describe("the reply layout", () => {
  it("is what the Worker reads, and any other layout fails loudly", async () => {
    const { keys } = await newSale();
    const raw = (await checkoutRaw(keys, ["layout-a", "layout-b"])) as unknown[];
    expect(raw[0]).toBe("checkout/5");
    expect(raw).toHaveLength(12 + 4 * 2);
    expect(() => parseCheckoutReply(raw, 3)).toThrow(ReplyLayoutError);
    expect(() => parseCheckoutReply(raw, 3)).toThrow(/layout checkout\/5 with 20 fields/);
    expect(() => parseCheckoutReply(["checkout/4", ...raw.slice(1)], 2)).toThrow(/layout checkout\/4/);
    expect(() => parseCheckoutReply([...raw.slice(0, 12), "MAYBE", "", 0, 0, ...raw.slice(16)], 2)).toThrow(/outcome MAYBE/);
  });
});

describe("checkout.lua with quantities, limits and sale states", () => {
  it("takes several units per order within the buyer's limit, and says why it refuses the rest", async () => {
    const { keys } = await newSale({ stock: 5, limit: 3 });
    const replies = await checkoutAll(keys, [
      ["a", 2],
      ["a", 2],
      ["a", 1],
      ["a", 1],
      ["b", 3],
      ["c", 1],
      ["d", 1],
    ]);
    expect(replies.map((r) => r.code)).toEqual([
      "OK", // a: 2 of 3
      "PER_USER_LIMIT_EXCEEDED", // a would hold 4
      "OK", // a: 3 of 3
      "ALREADY_PURCHASED", // a at the limit
      "QUANTITY_UNAVAILABLE", // b asks 3, 2 remain
      "OK", // c
      "OK", // d takes the last unit
    ]);
    expect(replies[1]).toEqual({ code: "PER_USER_LIMIT_EXCEEDED", held: 2, limit: 3 });
    expect(replies[4]).toEqual({ code: "QUANTITY_UNAVAILABLE", remaining: 2 });
    expect(await redis.hget(keys.meta, "remaining")).toBe("0");
    expect(String(await redis.hget(keys.buyers, "a")).split(":")[0]).toBe("3");
    const records = (await redis.hgetall(keys.pending)) as unknown as string[];
    expect(records.filter((_, i) => i % 2 === 1).sort()).toEqual(["1:a", "1:c", "1:d", "2:a"]);
    expect(await checkout(keys, ["e", 1])).toEqual({ code: "SOLD_OUT" });
  });

  it("answers a retry with the same Idempotency-Key with the order it reserved, and never reserves again", async () => {
    const { keys } = await newSale({ stock: 10, limit: 3 });
    const first = await checkout(keys, ["kim", 1, "key-1"]);
    expect(first.code).toBe("OK");
    const replies = await checkoutAll(keys, [
      ["kim", 1, "key-1"],
      ["kim", 2, "key-1"],
      ["kim", 1, "key-2"],
      ["kim", 1, "key-2"],
    ]);
    expect(replies[0]).toMatchObject({ code: "OK", orderId: orderOf(first), repeated: true });
    expect(replies[1]).toEqual({ code: "IDEMPOTENCY_KEY_REUSED" });
    expect(replies[2]).toMatchObject({ code: "OK", repeated: false }); // another key: another order
    expect(replies[3]).toMatchObject({ code: "OK", orderId: orderOf(replies[2] as Reservation), repeated: true });
    expect(await redis.hget(keys.meta, "remaining")).toBe("8");
    expect(String(await redis.hget(keys.buyers, "kim")).split(":")[0]).toBe("2");
  });

  it("refuses a paused or cancelled sale, writing nothing but its counters", async () => {
    const { keys } = await newSale({ stock: 5 });
    await redis.hset(keys.meta, { state: "paused" });
    expect(await checkout(keys, "p")).toEqual({ code: "SALE_PAUSED" });
    await redis.hset(keys.meta, { state: "cancelled" });
    expect(await checkout(keys, "p")).toEqual({ code: "SALE_CANCELLED" });
    await redis.hdel(keys.meta, "state");
    expect((await checkout(keys, "p")).code).toBe("OK");
    expect(await redis.hget(keys.meta, "remaining")).toBe("4");
  });

  it("counts every outcome per second in the minute's hash, with an expiry", async () => {
    const { keys } = await newSale({ stock: 1 });
    await checkoutAll(keys, ["s1", "s2", "s2"]);
    const counts = new Map<string, number>();
    const flat = (await redis.hgetall(statsKey(keys))) as unknown as string[];
    for (let i = 0; i < flat.length; i += 2) {
      const code = String(flat[i]).split(":")[1] as string;
      counts.set(code, (counts.get(code) ?? 0) + Number(flat[i + 1]));
    }
    expect(Object.fromEntries(counts)).toEqual({ OK: 1, SOLD_OUT: 2 });
    expect(Number(await redis.ttl(statsKey(keys)))).toBeGreaterThan(7_000);
  });
});

describe("return.lua and sale-sync.lua", () => {
  it("returns an order's units once, and frees the buyer to buy again", async () => {
    const { keys } = await newSale({ stock: 3, limit: 3 });
    const orderId = orderOf(await checkout(keys, ["bob", 2])) as string;
    expect(await returnUnits(keys, orderId, "bob", 2)).toBe(1);
    expect(await returnUnits(keys, orderId, "bob", 2)).toBe(0);
    expect(await redis.hget(keys.meta, "remaining")).toBe("3");
    expect(await redis.hget(keys.buyers, "bob")).toBeNull();
    expect(await redis.zcard(keys.outbox)).toBe(0);
    expect(await redis.hlen(keys.pending)).toBe(0);
    expect(await redis.sismember(keys.returned, orderId)).toBe(1);
    const again = await checkout(keys, ["bob", 3]);
    expect(again.code).toBe("OK");
    expect(orderOf(again)).not.toBe(orderId);
  });

  it("takes only the returned order's units off a buyer who holds more", async () => {
    const { keys } = await newSale({ stock: 5, limit: 3 });
    const first = orderOf(await checkout(keys, ["carol", 1])) as string;
    const second = orderOf(await checkout(keys, ["carol", 2])) as string;
    expect(await returnUnits(keys, first, "carol", 1)).toBe(1);
    expect(await redis.hget(keys.buyers, "carol")).toBe(`2:${second}`);
    expect(await redis.hget(keys.meta, "remaining")).toBe("3");
  });

  it("never re-creates a sale Redis does not hold, and says so", async () => {
    const keys = oneBucketKeys("gone-1");
    expect(await returnUnits(keys, "123", "nobody", 1)).toBe(-1);
    expect(await redis.exists(keys.meta, keys.returned)).toBe(0);
  });

  const record = (version: number, stock: number, state = "active") => {
    const now = Date.now();
    return [version, stock, now - 1000, now + 60_000, 7, 1000, 1000, "t", 1, state, "off", 0, 1, 30, 1, 0, "", ""];
  };

  it("sale-sync never resets a live sale: the same version again changes nothing", async () => {
    const { keys } = await newSale({ stock: 5 });
    await checkout(keys, "dave");
    expect(await sync(keys, record(1, 5))).toBe(0);
    expect(await redis.hget(keys.meta, "remaining")).toBe("4");
  });

  it("sale-sync applies a newer record once: added stock goes on sale, minted ids stay", async () => {
    const { keys } = await newSale({ stock: 2 });
    await checkout(keys, "erin");
    await checkout(keys, "frank");
    expect((await checkout(keys, "gina")).code).toBe("SOLD_OUT");
    expect(await sync(keys, record(3, 5))).toBe(1);
    // An older edit arriving late (version 2) is refused, whatever it says.
    expect(await sync(keys, record(2, 9, "paused"))).toBe(0);
    expect(await redis.hmget(keys.meta, "stock", "remaining", "seq", "version", "state")).toEqual(["5", "3", "2", "3", "active"]);
    expect((await checkout(keys, "gina")).code).toBe("OK");
  });

  it("sale-sync loads only a sale's first record: a later one for a sale Redis lost waits for a restore", async () => {
    const keys = oneBucketKeys(`lost-${++seq}`);
    expect(await sync(keys, record(2, 5))).toBe(-1);
    expect(await redis.exists(keys.meta)).toBe(0);
  });

  it("sale-sync refuses to take stock away, and pauses, resumes and cancels checkout", async () => {
    const { keys } = await newSale({ stock: 5 });
    await expect(sync(keys, record(2, 4))).rejects.toThrow(/stock never shrinks/);
    expect(await sync(keys, record(2, 5, "paused"))).toBe(1);
    expect((await checkout(keys, "hal")).code).toBe("SALE_PAUSED");
    expect(await sync(keys, record(3, 5, "active"))).toBe(1);
    expect((await checkout(keys, "hal")).code).toBe("OK");
    expect(await sync(keys, record(4, 5, "cancelled"))).toBe(1);
    expect((await checkout(keys, "ivy")).code).toBe("SALE_CANCELLED");
    expect(await redis.hget(keys.meta, "remaining")).toBe("4");
  });
});

describe("a sale split into buckets", () => {
  const BUCKETS = 4;
  /** Split as a new sale is: under a key of its own. */
  const SPLIT = { count: BUCKETS, key: bucketKeyOf("0123456789abcdef0123456789abcdef") };
  /** A sale of BUCKETS buckets, as sale-sync loads one D1 split. */
  async function splitSale(stock: number) {
    const id = `split-${++seq}`;
    const now = Date.now();
    const args = [1, stock, now - 1000, now + 60_000, 7, 1000, 1000, "t", 1, "active", "off", 0, 1, 30, BUCKETS, 0, "", ""];
    expect(await sync(saleKeys(id), args)).toBe(1);
    return id;
  }
  /** One merged call as src/checkout/reserve.ts sends it, split by `splitBy`; each buyer [user, Idempotency-Key]. */
  async function splitCheckout(id: string, buyers: [string, string][], splitBy = BUCKETS) {
    const { keys, bucketSlots } = checkoutScriptKeys(
      id,
      0,
      { ...SPLIT, count: splitBy },
      buyers.map(([user]) => user),
    );
    const args = buyers.flatMap(([user, key], i) => [user, "1", key, "", String(bucketSlots[i]), "", ""]);
    const reply = parseCheckoutReply(
      await redis.createScript<unknown>(lua("checkout")).exec(keys, [String(splitBy), "0", "", ...args]),
      buyers.length,
    );
    return { keys, reply };
  }
  // Users of every bucket: enough of them that each bucket holds some.
  const users = Array.from({ length: 16 }, (_, i) => `buyer-${i}`);

  it("keeps each buyer's records and orders in the buyer's bucket, and a call names only the buckets it touches", async () => {
    const id = await splitSale(100);
    expect(new Set(users.map((u) => bucketOf(u, SPLIT))).size).toBe(BUCKETS);
    const few = users.filter((u) => bucketOf(u, SPLIT) !== 3).slice(0, 3);
    const { keys, reply } = await splitCheckout(
      id,
      few.map((u) => [u, `key-${u}`]),
    );
    const touched = new Set(few.map((u) => bucketOf(u, SPLIT)));
    expect(keys).toHaveLength(4 + 6 * touched.size);
    expect(keys.some((k) => k.endsWith(":b3"))).toBe(false);
    const orders = (reply.reservations ?? []).map((r) => (r.code === "OK" ? r.orderId : r.code));
    for (const [i, user] of few.entries()) {
      const own = buyerKeys(id, user, SPLIT);
      expect(await redis.hget(own.buyers, user)).toBe(`1:${orders[i]}`);
      expect(await redis.hget(own.pending, String(orders[i]))).toBe(`1:${user}`);
      expect(await redis.zscore(own.outbox, String(orders[i]))).not.toBeNull();
      expect(await redis.hget(own.checkoutKeys, `${user}\nkey-${user}`)).toBe(`${orders[i]}:1`);
    }
    // The other buckets hold nothing of theirs; the untouched one holds nothing at all.
    const everyBucket = allBuckets(id, BUCKETS);
    const buyersPerBucket = await Promise.all(everyBucket.map((b) => redis.hlen(b.buyers)));
    expect(buyersPerBucket.reduce((n, c) => n + c, 0)).toBe(few.length);
    expect(await redis.exists(...Object.values(everyBucket[3] as BucketKeys))).toBe(0);
    // A retry with its key finds it in its bucket; a second purchase finds the buyer there.
    const again = await splitCheckout(id, [
      [few[0] as string, `key-${few[0]}`],
      [few[1] as string, "another-key"],
    ]);
    expect(again.reply.reservations).toMatchObject([
      { code: "OK", orderId: orders[0], repeated: true },
      { code: "ALREADY_PURCHASED", orderId: orders[1] },
    ]);
    expect(await redis.hget(saleKeys(id).meta, "remaining")).toBe(String(100 - few.length));
  });

  it("sells each unit once and one order per buyer when every call spans every bucket", async () => {
    const id = await splitSale(10);
    const crowd = Array.from({ length: 40 }, (_, i) => `crowd-${i}`);
    const replies = [];
    for (let i = 0; i < crowd.length; i += 8) {
      const { reply } = await splitCheckout(
        id,
        crowd.slice(i, i + 8).flatMap((u) => [[u, ""] as [string, string], [u, ""] as [string, string]]),
      );
      replies.push(...(reply.reservations ?? []));
    }
    expect(replies.filter((r) => r.code === "OK" && !r.repeated)).toHaveLength(10);
    const holders = await Promise.all(allBuckets(id, BUCKETS).map((b) => redis.hkeys(b.buyers)));
    const held = holders.flat();
    expect(held).toHaveLength(10);
    expect(new Set(held).size).toBe(10);
  });

  it("does nothing for a call split by another count than the sale's, and names the sale's", async () => {
    const id = await splitSale(10);
    const { reply } = await splitCheckout(id, [["stale", "k"]], 1);
    expect(reply).toEqual({ reservations: null, buckets: BUCKETS });
    expect(await redis.hget(saleKeys(id).meta, "remaining")).toBe("10");
    expect(await redis.exists(...allBuckets(id, 1).flatMap((b) => Object.values(b)))).toBe(0);
    // The same buyers split by the sale's count buy.
    expect((await splitCheckout(id, [["stale", "k"]])).reply.reservations).toMatchObject([{ code: "OK" }]);
  });

  it("refuses a buyer who names a bucket the call's KEYS do not hold", async () => {
    const id = await splitSale(10);
    const { keys } = checkoutScriptKeys(id, 0, SPLIT, ["a"]);
    await expect(
      redis.createScript<unknown>(lua("checkout")).exec(keys, [String(BUCKETS), "0", "", "a", "1", "", "", "2", "", ""]),
    ).rejects.toThrow(/names bucket 2/);
    expect(await redis.hget(saleKeys(id).meta, "remaining")).toBe("10");
  });

  it("return.lua gives units back from the buyer's bucket, and refuses another count", async () => {
    const id = await splitSale(10);
    const user = users[5] as string;
    const { reply } = await splitCheckout(id, [[user, ""]]);
    const orderId = String(reply.reservations?.[0] && orderOf(reply.reservations[0]));
    const own = buyerKeys(id, user, SPLIT);
    const returnWith = (splitBy: number) =>
      redis.eval(
        lua("return"),
        [saleKeys(id).meta, own.buyers, own.outbox, own.pending, own.returned],
        [orderId, user, "1", String(splitBy)],
      );
    await expect(returnWith(1)).rejects.toThrow(/BUCKETS_CHANGED/);
    expect(await redis.zscore(own.outbox, orderId)).not.toBeNull(); // nothing done
    expect(await returnWith(BUCKETS)).toBe(1);
    expect(await redis.hget(own.buyers, user)).toBeNull();
    expect(await redis.sismember(own.returned, orderId)).toBe(1);
    expect(await redis.hget(saleKeys(id).meta, "remaining")).toBe("10");
  });
});

describe("variants in checkout.lua, return.lua and sale-sync.lua", () => {
  /** A sale of two sizes: eu-41 (1 unit) and eu-42 (3), a limit of 2 units across them. */
  async function sizedSale() {
    const id = String(++seq);
    const keys = oneBucketKeys(id);
    const now = Date.now();
    const record = (version: number, sizes: [string, number][]) => [
      version,
      sizes.reduce((n, [, stock]) => n + stock, 0),
      now - 1000,
      now + 60_000,
      9,
      1000,
      1000,
      "t",
      2,
      "active",
      "off",
      0,
      1,
      30,
      1, // one bucket
      0,
      "",
      "",
      0, // admission not held
      "", // no notice
      ...sizes.flat(),
    ];
    expect(
      await sync(
        keys,
        record(1, [
          ["eu-41", 1],
          ["eu-42", 3],
        ]),
      ),
    ).toBe(1);
    return { keys, record };
  }
  /** Each buyer as [user, units] ("<quantity>[@<variant>]"), with an optional Idempotency-Key. */
  const buy = async (keys: Keys, buyers: ([string, string] | [string, string, string])[]) =>
    parseCheckoutReply(
      await checkoutRaw(keys, buyers),
      buyers.length,
      buyers.map(([, units]) => units.split("@")[1]),
    ).reservations ?? [];
  const counters = async (keys: Keys) => {
    const [total, a, b] = (await redis.hmget(keys.meta, "remaining", "v:eu-41", "v:eu-42")) as unknown as string[];
    return [Number(total), Number(a), Number(b)];
  };

  it("sells each variant from its own stock, the limit across them, in one call", async () => {
    const { keys } = await sizedSale();
    const replies = await buy(keys, [
      ["ann", "1@eu-41"],
      ["bob", "1@eu-41"],
      ["bob", "1@eu-42"],
      ["ann", "2@eu-42"],
      ["cat", "1"],
      ["cat", "1@eu-43"],
      ["dan", "1@eu-42"],
      ["eve", "2@eu-42"],
    ]);
    expect(replies.map((r) => r.code)).toEqual([
      "OK",
      "SOLD_OUT",
      "OK",
      "PER_USER_LIMIT_EXCEEDED",
      "VARIANT_REQUIRED",
      "VARIANT_NOT_FOUND",
      "OK",
      "QUANTITY_UNAVAILABLE",
    ]);
    expect(replies[1]).toEqual({ code: "SOLD_OUT", variant: "eu-41" });
    expect(replies[5]).toEqual({ code: "VARIANT_NOT_FOUND", variant: "eu-43" });
    expect(replies[7]).toEqual({ code: "QUANTITY_UNAVAILABLE", remaining: 1, variant: "eu-42" });
    expect(await counters(keys)).toEqual([1, 0, 1]);
    // Raw replies: field, value, field, value...
    const pending = ((await redis.hgetall(keys.pending)) as unknown as string[]).filter((_, i) => i % 2 === 1).sort();
    expect(pending).toEqual(["1@eu-41:ann", "1@eu-42:bob", "1@eu-42:dan"]);
  });

  it("a retry with the same key and variant repeats the order; another variant is a reused key", async () => {
    const { keys } = await sizedSale();
    const [first] = await buy(keys, [["eve", "1@eu-42", "k1"]]);
    const [again, other] = await buy(keys, [
      ["eve", "1@eu-42", "k1"],
      ["eve", "1@eu-41", "k1"],
    ]);
    expect(again).toMatchObject({ code: "OK", repeated: true, orderId: orderOf(first as Reservation) });
    expect(other?.code).toBe("IDEMPOTENCY_KEY_REUSED");
    expect(await counters(keys)).toEqual([3, 1, 2]);
  });

  it("a returned order's units go back to its own variant, and sale-sync raises a variant or adds one", async () => {
    const { keys, record } = await sizedSale();
    const [sold] = await buy(keys, [["fay", "1@eu-41"]]);
    expect(await counters(keys)).toEqual([3, 0, 3]);
    expect(
      await redis.eval(
        lua("return"),
        [keys.meta, keys.buyers, keys.outbox, keys.pending, keys.returned],
        [orderOf(sold as Reservation) as string, "fay", "1", "1", "eu-41"],
      ),
    ).toBe(1);
    expect(await counters(keys)).toEqual([4, 1, 3]);
    expect(
      await sync(
        keys,
        record(2, [
          ["eu-41", 2],
          ["eu-42", 3],
          ["eu-43", 5],
        ]),
      ),
    ).toBe(1);
    expect(await counters(keys)).toEqual([10, 2, 3]);
    expect(await redis.hget(keys.meta, "v:eu-43")).toBe("5");
    await expect(
      sync(
        keys,
        record(3, [
          ["eu-41", 1],
          ["eu-42", 9],
        ]),
      ),
    ).rejects.toThrow(/never shrinks/);
  });
});

describe("bloom.lua", () => {
  const keys = ["test:{bloom}:bits", "test:{bloom}:ready", "test:{bloom}:fill"];
  const run = async (op: string, bits: number, hashes: number, args: string[]) =>
    redis.createScript<unknown>(lua("bloom")).exec(keys, [op, String(bits), String(hashes), ...args]);
  const ids = (from: number, n: number) => Array.from({ length: n }, (_, i) => String(from + i));

  it("is sized for a million sale ids at 1% false positives", () => {
    const bits = Math.ceil((-BLOOM.capacity * Math.log(0.01)) / Math.LN2 ** 2);
    expect(BLOOM.bits).toBe(bits);
    expect(BLOOM.hashes).toBe(Math.round((bits / BLOOM.capacity) * Math.LN2));
  });

  it("filled to its capacity, says maybe for every id it holds and for about 1% of the others", async () => {
    await redis.del(...keys);
    const n = 10_000;
    const bits = Math.ceil((-n * Math.log(0.01)) / Math.LN2 ** 2);
    let after = "0";
    for (let page = 0; page < n / 1_000; page++) {
      const pageIds = ids(1 + page * 1_000, 1_000);
      expect(await run("fill", bits, 7, [after, ...pageIds])).toBeGreaterThan(900);
      after = pageIds.at(-1) as string;
    }
    expect(await run("has", bits, 7, ids(1, 10))).toEqual([0, ...Array(10).fill(1)]); // not trusted before it is marked filled
    expect(await run("ready", bits, 7, [])).toBe(1);
    const held = (await Promise.all(
      Array.from({ length: 10 }, (_, p) => run("has", bits, 7, ids(1 + p * 1_000, 1_000))),
    )) as number[][];
    expect(held.flatMap((r) => r.slice(1)).every((m) => m === 1)).toBe(true);
    const absent = (await Promise.all(
      Array.from({ length: 20 }, (_, p) => run("has", bits, 7, ids(1_000_000 + p * 1_000, 1_000))),
    )) as number[][];
    const falsePositives = absent.flatMap((r) => r.slice(1)).filter((m) => m === 1).length;
    expect(falsePositives / 20_000).toBeLessThan(0.013);
  });

  it("distrusts itself when its bits are lost, and a fill in progress starts again from the first id", async () => {
    await redis.del(...keys);
    expect(await run("fill", 1_000, 3, ["0", "1", "2"])).toBe(2);
    expect(await run("fill", 1_000, 3, ["7", "8"])).toBe(-1); // not where the fill is
    await redis.del(keys[0] as string); // the bits are evicted
    expect(await run("fill", 1_000, 3, ["2", "3"])).toBe(-1); // must start over
    expect(await redis.exists(keys[2] as string)).toBe(0);
    expect(await run("fill", 1_000, 3, ["0"])).toBe(0); // an empty database: the filter exists, empty
    expect(await run("ready", 1_000, 3, [])).toBe(1);
    expect(await run("has", 1_000, 3, ["1"])).toEqual([1, 0]);
    await redis.del(keys[0] as string);
    expect(await run("add", 1_000, 3, ["5"])).toBe(1); // a new sale while the bits are gone...
    expect(await run("has", 1_000, 3, ["1", "5"])).toEqual([0, 1, 1]); // ...leaves the filter untrusted
  });
});

describe("cache-read.lua, cache-put.lua and cache-evict.lua", () => {
  const keys = { entry: "test:{cache}:entry", floor: "test:{cache}:floor", live: "test:{cache}:live" };
  const read = async () =>
    (await redis.createScript<unknown>(lua("cache-read")).exec([keys.entry, keys.floor, keys.live], [])) as [
      number,
      string,
      string,
      ...string[],
    ];
  const put = (version: number, body: string, softMs: number, setIfNewer = "1") =>
    redis
      .createScript<unknown>(lua("cache-put"))
      .exec([keys.entry, keys.floor], [String(version), body, String(softMs), "60000", setIfNewer]);
  const evict = () => redis.createScript<unknown>(lua("cache-evict")).exec([keys.floor, keys.entry], ["60000"]);

  it("serves fresh, then stale past its logical expiry, with the live hash beside it", async () => {
    await redis.del(keys.entry, keys.floor, keys.live);
    await redis.hset(keys.live, { remaining: 7, "v:eu-42": 3 });
    const [now, state] = await read();
    expect(state).toBe("missing");
    // Fresh for a second: long enough that a busy machine still reads it fresh; then polled until stale.
    expect(await put(now, "card", 1_000)).toBe(1);
    expect((await read()).slice(1)).toEqual(["fresh", "card", "remaining", "7", "v:eu-42", "3"]);
    await eventually("the entry to go stale", async () => (await read())[1] === "stale");
    expect((await read()).slice(1)).toEqual(["stale", "card", "remaining", "7", "v:eu-42", "3"]);
    expect(Number(await redis.pttl(keys.entry))).toBeGreaterThan(50_000);
  });

  it("an eviction drops the entry and refuses every write-back read before it", async () => {
    await redis.del(keys.entry, keys.floor);
    const [before] = await read();
    await new Promise((r) => setTimeout(r, 2));
    await evict();
    expect(await put(before, "old", 60_000)).toBe(0);
    expect((await read())[1]).toBe("missing");
    // Without the comparison it goes in, as if new: the failure the floor prevents.
    expect(await put(before, "old", 60_000, "0")).toBe(1);
    expect((await read())[1]).toBe("fresh");
    await new Promise((r) => setTimeout(r, 2));
    await evict();
    const [after] = await read();
    expect(await put(after, "new", 60_000)).toBe(1);
    expect((await read()).slice(1, 3)).toEqual(["fresh", "new"]);
  });
});

// purge-chunk.lua: how the clean-up empties an archived sale's big keys (src/sales/purge.ts).
const purge = async (key: string, cursor: string, chunk: number) => {
  const [next, removed, exists] = (await redis
    .createScript<unknown[]>(lua("purge-chunk"))
    .exec([key], [cursor, String(chunk)])) as unknown[];
  return { cursor: String(next), removed: Number(removed), exists: Number(exists) === 1 };
};

const encoding = async (key: string) => String(await redis.exec(["OBJECT", "ENCODING", key]));

/** Calls the script until the key is gone, as src/sales/purge.ts does; the size after each call. */
async function purgeAll(key: string, size: () => Promise<number>, chunk: number) {
  const sizes: number[] = [];
  const removed: number[] = [];
  let cursor = "0";
  for (let calls = 0; calls < 10_000; calls++) {
    const step = await purge(key, cursor, chunk);
    removed.push(step.removed);
    sizes.push(await size());
    if (!step.exists) return { sizes, removed };
    cursor = step.cursor;
  }
  throw new Error(`${key} was not gone after 10,000 calls`);
}

const fields = (n: number, prefix = "user-") =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`${prefix}${i}`, `1:${i}`]));

describe("purge-chunk.lua", () => {
  it("empties a hash past the listpack size a chunk at a time: never more than a chunk per call, the key gone at the end", async () => {
    await redis.hset("purge:big-hash", fields(3_000));
    expect(await encoding("purge:big-hash")).toBe("hashtable");
    const { sizes, removed } = await purgeAll("purge:big-hash", () => redis.hlen("purge:big-hash"), 250);
    expect(Math.max(...removed)).toBeLessThanOrEqual(250);
    expect(removed.reduce((a, b) => a + b, 0)).toBe(3_000);
    expect(sizes.length).toBeGreaterThanOrEqual(12);
    // Every call left the hash no larger than the one before.
    for (let i = 1; i < sizes.length; i++) expect(sizes[i]).toBeLessThanOrEqual(sizes[i - 1] as number);
    expect(await redis.exists("purge:big-hash")).toBe(0);
  });

  it("cuts a small hash, scanned whole in one step, into chunks too", async () => {
    await redis.hset("purge:small-hash", fields(100));
    expect(await encoding("purge:small-hash")).toBe("listpack");
    const first = await purge("purge:small-hash", "0", 30);
    expect(first).toEqual({ cursor: "0", removed: 30, exists: true });
    const { removed } = await purgeAll("purge:small-hash", () => redis.hlen("purge:small-hash"), 30);
    expect(removed).toEqual([30, 30, 10]);
  });

  it("empties sorted sets and sets the same way, and unlinks a string at once", async () => {
    const members = Array.from({ length: 1_500 }, (_, i) => ({ score: i, member: `order-${i}` }));
    const [firstMember, ...rest] = members;
    await redis.zadd("purge:zset", firstMember as { score: number; member: string }, ...rest);
    await redis.sadd("purge:set", "order-0", ...members.slice(1).map((m) => m.member));
    for (const [key, size] of [
      ["purge:zset", () => redis.zcard("purge:zset")],
      ["purge:set", () => redis.scard("purge:set")],
    ] as const) {
      const { removed } = await purgeAll(key, size, 200);
      expect(Math.max(...removed), key).toBeLessThanOrEqual(200);
      expect(
        removed.reduce((a, b) => a + b, 0),
        key,
      ).toBe(1_500);
      expect(await redis.exists(key)).toBe(0);
    }
    await redis.set("purge:string", "x");
    expect(await purge("purge:string", "0", 10)).toEqual({ cursor: "0", removed: 1, exists: false });
    expect(await redis.exists("purge:string")).toBe(0);
    expect(await purge("purge:missing", "0", 10)).toEqual({ cursor: "0", removed: 0, exists: false });
    expect(await redis.exists("purge:missing")).toBe(0); // never created
  });

  it("starts another scan when members came in during the last one, and refuses a chunk it cannot unpack", async () => {
    await redis.hset("purge:growing", fields(1_000));
    let step = await purge("purge:growing", "0", 100);
    await redis.hset("purge:growing", fields(50, "late-"));
    while (step.cursor !== "0") step = await purge("purge:growing", step.cursor, 100);
    // A full scan ended, but whatever it may have missed is still there: the key says so.
    const left = await redis.hlen("purge:growing");
    expect(step.exists).toBe(left > 0);
    await purgeAll("purge:growing", () => redis.hlen("purge:growing"), 100);
    expect(await redis.exists("purge:growing")).toBe(0);

    await expect(purge("purge:any", "0", 0)).rejects.toThrow(/chunk must be 1 to 5000/);
    await expect(purge("purge:any", "0", 5_001)).rejects.toThrow(/chunk must be 1 to 5000/);
  });
});

describe("every script the Worker runs", () => {
  const files = readdirSync(new URL("../../lua/", import.meta.url)).filter((f) => f.endsWith(".lua"));

  // Upstash then locks only the keys in KEYS instead of its global lock. Redis 7.0 does not
  // know the flag: the gateway strips it. Each script compiles that way here (SCRIPT LOAD
  // answers the SHA of the source as sent, as Upstash does), and its own tests run it so.
  it.each(files)("%s declares allow-key-locking and loads through the gateway", async (file) => {
    const source = lua(file.replace(/\.lua$/, ""));
    expect(source.split("\n")[0]).toBe("#!lua flags=allow-key-locking");
    expect(await redis.scriptLoad(source)).toBe(createHash("sha1").update(source).digest("hex"));
  });
});
