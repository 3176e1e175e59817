// One account, one seat: the counting the queue join is to use, against the suite's real Redis.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { beyondAccountsPerAddress } from "../../src/admission/accounts-per-address";
import { redisFor } from "../../src/redis/client";

const redis = redisFor(env);
const settings = { limit: 3, ttlSeconds: 60 };

describe("user ids per client address per sale", () => {
  it("lets the first `limit` user ids of an address through and flags the rest, even when they arrive together", async () => {
    const saleId = String(Date.now());
    const users = Array.from({ length: 20 }, (_, i) => `seat-${i}`);
    const flags = await Promise.all(users.map((u) => beyondAccountsPerAddress(redis, saleId, "192.0.2.10", u, settings)));
    expect(flags.filter((f) => !f)).toHaveLength(3);
    // Asking again changes nobody's place.
    const again = await Promise.all(users.map((u) => beyondAccountsPerAddress(redis, saleId, "192.0.2.10", u, settings)));
    expect(again).toEqual(flags);
    // Another address, and another sale, count apart.
    expect(await beyondAccountsPerAddress(redis, saleId, "192.0.2.11", "seat-19", settings)).toBe(false);
    expect(await beyondAccountsPerAddress(redis, `${saleId}1`, "192.0.2.10", "seat-19", settings)).toBe(false);
  });

  it("is off at 0, and for a caller without an address", async () => {
    const saleId = String(Date.now() + 7);
    for (let i = 0; i < 5; i++) {
      expect(await beyondAccountsPerAddress(redis, saleId, "192.0.2.20", `off-${i}`, { limit: 0, ttlSeconds: 60 })).toBe(false);
      expect(await beyondAccountsPerAddress(redis, saleId, undefined, `off-${i}`, { limit: 1, ttlSeconds: 60 })).toBe(false);
    }
  });
});
