// Every @upstash/ratelimit algorithm, unmodified, through the gateway: its scripts carry the
// Upstash-only `allow-key-locking` flag, and after the first call EVALSHA must hit.

import { Ratelimit } from "@upstash/ratelimit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandStat } from "../../dev/lib/redis-stats.ts";
import { type GatewayFixture, startGatewayFixture } from "./gateway-fixture.ts";

let fixture: GatewayFixture;

beforeAll(async () => {
  fixture = await startGatewayFixture();
});
afterAll(() => fixture.stop());

const LIMIT = 3;
// Windows far longer than the test, so no window boundary falls inside it.
const algorithms = {
  fixedWindow: Ratelimit.fixedWindow(LIMIT, "1 h"),
  slidingWindow: Ratelimit.slidingWindow(LIMIT, "1 h"),
  tokenBucket: Ratelimit.tokenBucket(1, "1 h", LIMIT),
  cachedFixedWindow: Ratelimit.cachedFixedWindow(LIMIT, "1 h"),
};

describe("@upstash/ratelimit", () => {
  for (const [name, limiter] of Object.entries(algorithms)) {
    it(`${name} allows exactly ${LIMIT} then blocks, with EVALSHA hitting after the first call`, async () => {
      const ratelimit = new Ratelimit({ redis: fixture.client, limiter, prefix: `rl:${name}` });
      await fixture.direct.config("RESETSTAT");
      fixture.gateway.resetStats();

      const first = await ratelimit.limit("user-1");
      // The first call misses (NOSCRIPT) and loads the script with EVAL: two round trips.
      expect(fixture.gateway.stats().requests).toBe(2);
      const rest = [];
      for (let i = 0; i < LIMIT + 1; i++) {
        const result = await ratelimit.limit("user-1");
        await result.pending;
        rest.push(result);
      }
      const results = [first, ...rest];
      expect(results.map((r) => r.success)).toEqual([true, true, true, false, false]);
      expect(results.slice(0, LIMIT).map((r) => r.remaining)).toEqual([2, 1, 0]);
      expect(results.every((r) => r.limit === LIMIT)).toBe(true);

      // Another identifier is not affected.
      expect((await ratelimit.limit("user-2")).success).toBe(true);

      const evalsha = await commandStat(fixture.direct, "evalsha");
      expect(await commandStat(fixture.direct, "eval")).toEqual({ calls: 1, failed: 0 });
      expect(evalsha.failed).toBe(1);
      expect(evalsha.calls).toBeGreaterThanOrEqual(LIMIT + 1);
      // Every later call that reached Redis was one round trip (no NOSCRIPT fallback).
      expect(fixture.gateway.stats().requests).toBe(2 + evalsha.calls - 1);
    });
  }
});
