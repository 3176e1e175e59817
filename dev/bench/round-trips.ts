// Round trips to Upstash (HTTP requests counted at the gateway) and Redis commands
// (INFO commandstats delta) per checkout outcome, on a warm isolate. The round-trip budget
// test asserts these figures; `npm run bench` prints them.
import { Redis as IORedis } from "ioredis";
import { saleKeys } from "../../src/redis/keys.ts";
import type { Stack } from "../stack/local-stack.ts";

export interface OutcomeCost {
  outcome: string;
  roundTrips: number;
  redisCommands: number;
  /** Settlement's own round trips included in the figures (one outbox clear per batch). */
  note?: string;
}

/** Calls per Redis command so far (INFO commandstats), lowercased names. */
export async function commandCalls(redis: IORedis): Promise<Map<string, number>> {
  const info = await redis.info("commandstats");
  return new Map([...info.matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)].map((m) => [m[1] as string, Number(m[2])]));
}

async function totalCommands(redis: IORedis): Promise<number> {
  let total = 0;
  for (const [command, calls] of await commandCalls(redis)) if (command !== "info") total += calls;
  return total;
}

async function measure(
  stack: Stack,
  redis: IORedis,
  action: () => Promise<unknown>,
): Promise<{ roundTrips: number; redisCommands: number }> {
  await stack.gateway.resetStats();
  const before = await totalCommands(redis);
  await action();
  const { requests: roundTrips } = await stack.gateway.stats();
  return { roundTrips, redisCommands: (await totalCommands(redis)) - before };
}

const expectStatus = async (p: Promise<{ status: number; body: unknown }>, status: number) => {
  const res = await p;
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
};

export async function benchRoundTrips(stack: Stack): Promise<OutcomeCost[]> {
  const redis = new IORedis(stack.redis.url);
  try {
    const sale = await stack.createSale({ stock: 2, name: "round trips" });
    const [a, b, c] = (await Promise.all(["rt-a", "rt-b", "rt-c"].map((u) => stack.token(`${sale.id}-${u}`)))) as [
      string,
      string,
      string,
    ];
    const costs: OutcomeCost[] = [];
    /** The cost of one checkout of `token` on `saleId`, which must answer `status`. */
    const checkoutCost = async (outcome: string, saleId: string, token: string, status: number) => {
      costs.push({ outcome, ...(await measure(stack, redis, () => expectStatus(stack.checkout(saleId, token), status))) });
    };

    // Accepted: the checkout itself, then the drain (its settlement clears the outbox once).
    const accepted = await measure(stack, redis, async () => {
      await expectStatus(stack.checkout(sale.id, a), 202);
      await waitForOutboxEmpty(redis, sale.id);
    });
    costs.push({ outcome: "accepted", ...accepted, note: "includes 1 round trip of its settlement (outbox clear)" });
    await checkoutCost("repeat buyer (warm)", sale.id, a, 409);

    await expectStatus(stack.checkout(sale.id, b), 202);
    await waitForOutboxEmpty(redis, sale.id); // keep its settlement out of the next figure
    // The last unit's reply said remaining 0, so this isolate already knows it is sold out.
    await checkoutCost("sold out (warm)", sale.id, c, 409);

    const ended = await stack.createSale({
      name: "ended",
      startsAt: new Date(Date.now() - 7_200_000).toISOString(),
      endsAt: new Date(Date.now() - 3_600_000).toISOString(),
    });
    await checkoutCost("ended (first)", ended.id, a, 409);
    await checkoutCost("ended (warm)", ended.id, b, 409);

    // A bucket of one token refilled once a second: the second buyer, right after, is throttled.
    const throttled = await stack.createSale({ stock: 10, name: "throttled", admission: { rate: 1, burst: 1 } });
    await expectStatus(stack.checkout(throttled.id, a), 202);
    await waitForOutboxEmpty(redis, throttled.id);
    await checkoutCost("rate limited (first)", throttled.id, b, 429);
    await checkoutCost("rate limited (warm)", throttled.id, c, 429);

    // A stampede: the isolate merges the buyers it holds into one script call per round trip.
    const crowd = await stack.createSale({ stock: 200, name: "stampede" });
    const crowdTokens = await Promise.all(Array.from({ length: 200 }, (_, i) => stack.token(`${crowd.id}-rt-crowd-${i}`)));
    const stampede = await measure(stack, redis, async () => {
      await Promise.all(crowdTokens.map((t) => expectStatus(stack.checkout(crowd.id, t), 202)));
      await waitForOutboxEmpty(redis, crowd.id);
    });
    costs.push({
      outcome: "accepted, 200 buyers at once (per buyer)",
      roundTrips: stampede.roundTrips / crowdTokens.length,
      redisCommands: stampede.redisCommands / crowdTokens.length,
      note: "merged script calls; includes settlement's outbox clears",
    });

    // 200 clients polling the sale page at once, twice, 600 ms apart.
    const poll = () =>
      Promise.all(Array.from({ length: 200 }, () => stack.worker.fetch(`/api/sales/${sale.id}`).then((r) => r.arrayBuffer())));
    costs.push({
      outcome: "sale page, 200 polls x 2 (600 ms apart)",
      ...(await measure(stack, redis, async () => {
        await poll();
        await new Promise((r) => setTimeout(r, 600));
        await poll();
      })),
    });
    return costs;
  } finally {
    redis.disconnect();
  }
}

/** Polls Redis directly (not through the gateway, which is counting). */
async function waitForOutboxEmpty(redis: IORedis, saleId: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if ((await redis.zcard(saleKeys(saleId).outbox)) === 0) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error("the order did not settle in time");
}
