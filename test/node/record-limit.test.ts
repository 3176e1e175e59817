// The contract's sale under a small Redis record limit: REDIS_MAX_RECORD_BYTES = 256 KiB on the
// Worker and on its gateway, which refuses any write to a key already past it, as Upstash does.
// 10,000 buyers, each with an Idempotency-Key, buy a sale of 10,000 units: all sell, none gets
// a 5xx, and no key of the sale grows past the limit. Unsplit, the hash of checkout keys alone
// would pass the limit after about 2,000 buyers, and every checkout after that would be refused.
// No settlement consumer: the outbox and pending records keep every order, their worst case.
// Everything is real: workerd, the gateway, redis-server, D1.
import { Redis as UpstashRedis } from "@upstash/redis";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";
import { drive, planCrowd } from "../../load/runner/crowd.ts";
import { allBuckets, bucketsFor, saleKeys } from "../../src/shared/keys.ts";

const RECORD_LIMIT = 262_144;
const BUYERS = 10_000;

let stack: Stack;
let redis: Redis;

beforeAll(async () => {
  stack = await startStack({ vars: { REDIS_MAX_RECORD_BYTES: String(RECORD_LIMIT) }, unsettled: true });
  redis = new Redis(stack.redis.url);
});
afterAll(async () => {
  redis?.disconnect();
  await stack?.stop();
});

/** Every key under the sale's hash tag, with its MEMORY USAGE (every field counted). */
async function saleKeySizes(saleId: string): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  let cursor = "0";
  do {
    const [next, keys] = await redis.scan(cursor, "MATCH", `fs:{sale:${saleId}}*`, "COUNT", 1_000);
    for (const key of keys) sizes.set(key, Number(await redis.memory("USAGE", key, "SAMPLES", 0)));
    cursor = next;
  } while (cursor !== "0");
  return sizes;
}

it("sells a sale of 10,000 units to 10,000 buyers with Idempotency-Keys, no 5xx, no key past a 256 KiB record limit", async () => {
  // The gateway enforces the limit: a write to a key already past it is refused with Upstash's text.
  const direct = new UpstashRedis({ url: stack.gateway.url, token: stack.gateway.token, enableTelemetry: false });
  await direct.set("record-limit:probe", "x".repeat(RECORD_LIMIT + 1));
  await expect(direct.append("record-limit:probe", "y")).rejects.toThrow(/max single record size exceeded/);
  await direct.del("record-limit:probe");

  const sale = await stack.api.createSale({ stock: BUYERS, name: "record limit" });
  const buckets = bucketsFor(BUYERS, RECORD_LIMIT, false);
  expect(Number(await redis.hget(saleKeys(sale.id).meta, "buckets"))).toBe(buckets);

  const shots = await planCrowd(stack.api, BUYERS, 1, `limit-${sale.id}-`);
  const { samples } = await drive(
    shots,
    async (shot) => {
      const res = await stack.api.checkoutResponse(sale.id, shot.token, { headers: { "Idempotency-Key": `key-${shot.userId}` } });
      const body = (await res.json()) as { orderId?: string; error?: { code: string } };
      return { status: res.status, code: body.error?.code ?? "OK" };
    },
    { concurrency: 32 },
  );
  const statuses = new Map<number, number>();
  for (const s of samples) statuses.set(s.status, (statuses.get(s.status) ?? 0) + 1);
  expect(Object.fromEntries(statuses)).toEqual({ 202: BUYERS });
  expect(await redis.hget(saleKeys(sale.id).meta, "remaining")).toBe("0");

  // Every buyer and every Idempotency-Key is recorded, spread over the buckets.
  const every = allBuckets(sale.id, buckets);
  const count = async (read: (key: string) => Promise<number>, role: "buyers" | "checkoutKeys" | "outbox") =>
    (await Promise.all(every.map((b) => read(b[role])))).reduce((n, c) => n + c, 0);
  expect(await count((k) => redis.hlen(k), "buyers")).toBe(BUYERS);
  expect(await count((k) => redis.hlen(k), "checkoutKeys")).toBe(BUYERS);
  expect(await count((k) => redis.zcard(k), "outbox")).toBe(BUYERS);

  const sizes = await saleKeySizes(sale.id);
  const [largestKey, largest] = [...sizes].reduce((a, b) => (b[1] > a[1] ? b : a));
  expect(largest, `${largestKey} holds ${largest} bytes`).toBeLessThanOrEqual(RECORD_LIMIT);
  // Sized for half the limit at full stock, with room for longer ids and keys than these.
  expect(largest).toBeLessThanOrEqual(RECORD_LIMIT / 2);
});
