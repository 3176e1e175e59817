// src/redis/sliding-window.ts against @upstash/ratelimit's slidingWindow, whose part it keeps:
// through the gateway, with a client set up as the Worker's, the two count on the same keys
// and answer alike; the window's scripts reply as the library's own on every step of a
// schedule across window boundaries.

import { Ratelimit } from "@upstash/ratelimit";
import { Redis } from "@upstash/redis/cloudflare";
import { afterAll, beforeAll, expect, it } from "vitest";
import { commandStat } from "../../dev/lib/redis-stats.ts";
import { LUA } from "../../src/redis/scripts.ts";
import { SlidingWindow } from "../../src/redis/sliding-window.ts";
import { type GatewayFixture, startGatewayFixture, TOKEN } from "./gateway-fixture.ts";

let fixture: GatewayFixture;
let redis: Redis;

beforeAll(async () => {
  fixture = await startGatewayFixture();
  redis = new Redis({
    url: fixture.gateway.url,
    token: TOKEN,
    automaticDeserialization: false,
    responseEncoding: false,
    enableTelemetry: false,
  });
});
afterAll(() => fixture.stop());

const LIMIT = 3;
/** A window far longer than the test, so no window boundary falls inside it. */
const HOUR_MS = 3_600_000;
const answer = (r: { success: boolean; limit: number; remaining: number; reset: number }) => ({
  success: r.success,
  limit: r.limit,
  remaining: r.remaining,
  reset: r.reset,
});

it("counts on the library's keys and answers as the library does", async () => {
  const prefix = "sw:shared";
  const library = new Ratelimit({ redis, limiter: Ratelimit.slidingWindow(LIMIT, "1 h"), prefix, analytics: false });
  const cache = new Map<string, number>();
  const own = new SlidingWindow({ redis, tokens: LIMIT, windowMs: HOUR_MS, prefix, ephemeralCache: cache, timeoutMs: 0 });

  // Each counts what the other counted: the same keys.
  const results = [await library.limit("user-1"), await own.limit("user-1"), await library.limit("user-1")];
  const reset = (Math.floor(Date.now() / HOUR_MS) + 1) * HOUR_MS;
  expect(results.map(answer)).toEqual([2, 1, 0].map((remaining) => ({ success: true, limit: LIMIT, remaining, reset })));

  // Over the limit: refused by Redis as the library refuses, then from the ephemeral cache
  // without a command.
  const refused = await own.limit("user-1");
  expect(answer(refused)).toEqual(answer(await library.limit("user-1")));
  expect(answer(refused)).toEqual({ success: false, limit: LIMIT, remaining: 0, reset });
  expect([...cache.keys()]).toEqual([`${prefix}:user-1`]);
  const evalsha = await commandStat(fixture.direct, "evalsha");
  expect(await own.limit("user-1")).toEqual({ ...answer(refused), reason: "cacheBlock" });
  expect(await commandStat(fixture.direct, "evalsha")).toEqual(evalsha);
  // Another caller is not affected.
  expect(answer(await own.limit("user-2"))).toEqual({ success: true, limit: LIMIT, remaining: LIMIT - 1, reset });
});

it("sends its script when Redis has none, and calls made together share one round trip", async () => {
  await fixture.direct.script("FLUSH");
  await fixture.direct.config("RESETSTAT");
  fixture.gateway.resetStats();
  const own = new SlidingWindow({ redis, tokens: LIMIT, windowMs: HOUR_MS, prefix: "sw:alone", timeoutMs: 0 });
  expect((await own.limit("user-1")).remaining).toBe(LIMIT - 1);
  // EVALSHA missed, EVAL loaded the script: two round trips.
  expect(fixture.gateway.stats().requests).toBe(2);
  expect(await commandStat(fixture.direct, "eval")).toEqual({ calls: 1, failed: 0 });

  fixture.gateway.resetStats();
  const [a, b] = await Promise.all([own.limit("user-1"), own.limit("user-2")]);
  expect([a.remaining, b.remaining]).toEqual([LIMIT - 2, LIMIT - 1]);
  expect(fixture.gateway.stats().requests).toBe(1);
  expect(await commandStat(fixture.direct, "evalsha")).toEqual({ calls: 3, failed: 1 });
});

it("answers success with reason timeout when Redis is slower than its bound, as the library does", async () => {
  // A gateway a second away (each hop half of it), in this process: the 50 ms timers fire first.
  const far = await startGatewayFixture({ latencyMs: 1_000 });
  try {
    const slow = new Redis({ url: far.gateway.url, token: TOKEN, automaticDeserialization: false, enableTelemetry: false });
    const own = new SlidingWindow({ redis: slow, tokens: LIMIT, windowMs: HOUR_MS, prefix: "sw:slow", timeoutMs: 50 });
    const library = new Ratelimit({
      redis: slow,
      limiter: Ratelimit.slidingWindow(LIMIT, "1 h"),
      prefix: "sw:slow",
      timeout: 50,
    });
    const timedOut = { success: true, limit: 0, remaining: 0, reset: 0 };
    expect(answer(await library.limit("user-1"))).toEqual(timedOut);
    expect(await own.limit("user-1")).toEqual({ ...timedOut, reason: "timeout" });
  } finally {
    await far.stop();
  }
});

/** The library's two scripts as it sends them with EVAL, caught by a client that answers NOSCRIPT to EVALSHA. */
async function libraryScripts(): Promise<{ limit: string; remaining: string }> {
  const sent: string[] = [];
  const catcher = {
    evalsha: async () => {
      throw new Error("NOSCRIPT No matching script");
    },
    eval: async (script: string) => {
      sent.push(script);
      return [0, LIMIT];
    },
  } as unknown as Redis;
  const library = new Ratelimit({ redis: catcher, limiter: Ratelimit.slidingWindow(LIMIT, "1 h"), analytics: false });
  await library.limit("anyone");
  await library.getRemaining("anyone");
  const [limit, remaining] = sent;
  if (limit === undefined || remaining === undefined) throw new Error("the library sent no script");
  return { limit, remaining };
}

it("its scripts reply as the library's on every step of a schedule across windows", async () => {
  const library = await libraryScripts();
  // A minute, so no key the schedule writes expires while it runs (each lives two windows and a second).
  const windowMs = 60_000;
  // Times within a window, at its end, and into the next ones, each step counting 1 (or 2).
  const schedule = [0, 10, 20, 30, 59_999, 60_000, 75_000, 90_000, 90_000, 105_000, 119_999, 144_000, 234_000, 234_001, 300_000];
  const start = Math.floor(Date.now() / windowMs) * windowMs + 10 * windowMs;
  const keysOf = (prefix: string, now: number) => {
    const window = Math.floor(now / windowMs);
    return [`${prefix}:${window}`, `${prefix}:${window - 1}`];
  };
  for (const [i, offset] of schedule.entries()) {
    const now = start + offset;
    const args = [String(LIMIT), String(now), String(windowMs)];
    const increment = String(i % 5 === 4 ? 2 : 1);
    const theirs = await redis.eval(library.limit, keysOf("sw:theirs", now), [...args, increment]);
    const ours = await redis.eval(LUA.slidingWindow, keysOf("sw:ours", now), [...args, increment]);
    expect([offset, ours]).toEqual([offset, theirs]);
    const theirsLeft = await redis.eval(library.remaining, keysOf("sw:theirs", now), args);
    const oursLeft = await redis.eval(LUA.slidingWindow, keysOf("sw:ours", now), [...args, "0"]);
    expect([offset, oursLeft]).toEqual([offset, theirsLeft]);
  }
});
