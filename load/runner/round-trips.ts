// Round trips to Upstash (HTTP requests counted at the gateway) and Redis commands
// (INFO commandstats delta) per checkout outcome, on a warm isolate. The round-trip budget
// test asserts these figures; `npm run bench` prints them.
import { Redis as IORedis } from "ioredis";
import type { Answer } from "../../dev/lib/api-client.ts";
import { totalCommands } from "../../dev/lib/redis-stats.ts";
import { outboxSize } from "../../dev/lib/sale-buckets.ts";
import { eventually } from "../../dev/lib/wait.ts";
import type { Stack } from "../../dev/stack/local-stack.ts";
import { saleCardKeys } from "../../src/shared/keys.ts";
import { EVICT_AGAIN_AFTER_SECONDS } from "../../src/shared/limits.ts";

export interface OutcomeCost {
  outcome: string;
  roundTrips: number;
  redisCommands: number;
  /** Settlement's own round trips included in the figures (one outbox clear per batch). */
  note?: string;
  /** How long the measured work took, where the figure depends on it. */
  elapsedMs?: number;
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

/** Refusals in a row measured for each warm-isolate figure. */
const WARM_BURST = 20;
/** Locally answered refusals are counted in Redis a second after the first of them. */
const COUNTERS_FLUSHED_MS = 1_300;
/**
 * What an isolate learns it keeps about a second (src/checkout/isolate-memo.ts). What an
 * accepted reply taught it (a buyer's order, the last unit's remaining 0) is let go before
 * the warm figures that follow one: a slow settlement wait may have left it only a moment,
 * and the burst would then be partly answered by Redis.
 */
const forgetAcceptedReplies = () => new Promise((r) => setTimeout(r, 1_100));

const expectStatus = async (p: Promise<Answer>, status: number) => {
  const res = await p;
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status} ${res.code}`);
};

/**
 * Measures each outcome on `stack`, which must run without the per-user limit
 * (USER_RATE_LIMIT=0): a warm burst from one buyer would meet it first, and it costs no
 * round trip either way.
 */
export async function measureRoundTrips(stack: Stack): Promise<OutcomeCost[]> {
  const { api } = stack;
  const redis = new IORedis(stack.redis.url);
  try {
    // Every sale first: each creation evicts its cached pages again a moment later, a round
    // trip of its own that must not land inside a figure.
    const [sale, ended, throttled, crowd, sized, laned] = await Promise.all([
      api.createSale({ stock: 2, name: "round trips" }),
      api.createSale({
        name: "ended",
        startsAt: new Date(Date.now() - 7_200_000).toISOString(),
        endsAt: new Date(Date.now() - 3_600_000).toISOString(),
      }),
      // Buckets of one token refilled once a second: the second buyer, right after its first, is throttled.
      Promise.all([1, 2, 3].map((n) => api.createSale({ stock: 10, name: `throttled ${n}`, admission: { rate: 1, burst: 1 } }))),
      api.createSale({ stock: 200, name: "stampede" }),
      api.createSale({
        name: "sizes",
        variants: [
          { id: "s", label: "S", stock: 1 },
          { id: "m", label: "M", stock: 5 },
        ],
      }),
      // A members' lane open now, the public an hour away: every checkout names a code.
      api.createSale({
        stock: 100,
        name: "lanes",
        startsAt: new Date(Date.now() + 3_600_000).toISOString(),
        endsAt: new Date(Date.now() + 7_200_000).toISOString(),
        lanes: [{ name: "members", startsAt: new Date(Date.now() - 1_000).toISOString() }],
      }),
    ]);
    await waitForSecondEvictions(redis, [sale.id, ended.id, ...throttled.map((t) => t.id), crowd.id, sized.id, laned.id]);
    const codes = await api.codeBatch(laned.id, "members", { count: 51 });
    if (codes.status !== 201) throw new Error(`codes for the lanes sale: ${codes.status} ${codes.code}`);
    const [firstCode, ...crowdCodes] = codes.body?.codes ?? [];
    const [a, b, c] = (await Promise.all(["rt-a", "rt-b", "rt-c"].map((u) => api.userToken(`${sale.id}-${u}`)))) as [
      string,
      string,
      string,
    ];
    const costs: OutcomeCost[] = [];
    /** The cost of one checkout of `token` on `saleId`, which must answer `status`. */
    const checkoutCost = async (outcome: string, saleId: string, token: string, status: number) => {
      costs.push({ outcome, ...(await measure(stack, redis, () => expectStatus(api.checkout(saleId, token), status))) });
    };
    /**
     * A warm isolate's refusal, per attempt: one attempt teaches the isolate (not counted),
     * then a burst of WARM_BURST at once (well inside the second the isolate keeps what it
     * learnt, however slow the machine) is measured together with the one write that counts
     * them for the admin console (a second later), so each attempt's share of it is in the figure.
     */
    const warmCost = async (outcome: string, saleId: string, token: string, status: number, variant?: string) => {
      const attempt = () => expectStatus(api.checkout(saleId, token, undefined, variant), status);
      await attempt();
      const burst = await measure(stack, redis, async () => {
        await Promise.all(Array.from({ length: WARM_BURST }, attempt));
        await new Promise((r) => setTimeout(r, COUNTERS_FLUSHED_MS));
      });
      costs.push({
        outcome,
        roundTrips: burst.roundTrips / WARM_BURST,
        redisCommands: burst.redisCommands / WARM_BURST,
        note: `per attempt, of ${WARM_BURST} at once: the counters' write a second later is shared`,
      });
    };

    // Accepted: the checkout itself, then the drain (its settlement clears the outbox once).
    const accepted = await measure(stack, redis, async () => {
      await expectStatus(api.checkout(sale.id, a), 202);
      await waitForOutboxEmpty(redis, sale.id);
    });
    costs.push({ outcome: "accepted", ...accepted, note: "includes 1 round trip of its settlement (outbox clear)" });
    await forgetAcceptedReplies();
    await warmCost("repeat buyer (warm)", sale.id, a, 409);

    await expectStatus(api.checkout(sale.id, b), 202);
    await waitForOutboxEmpty(redis, sale.id); // keep its settlement out of the next figure
    await forgetAcceptedReplies();
    await warmCost("sold out (warm)", sale.id, c, 409);

    await checkoutCost("ended (first)", ended.id, a, 409);
    await warmCost("ended (warm)", ended.id, b, 409);

    // The bucket holds one token, refilled once a second: a takes it and b, sent right behind,
    // is refused. a's acceptance and settlement, measured alone above, come off. On a machine so
    // busy that a second passed between the two, the refill sold to b: the pair is tried again
    // on the next such sale, so the figure is always a refusal's.
    let throttledFirst: OutcomeCost | undefined;
    for (const bucket of throttled) {
      let refused = false;
      const pair = await measure(stack, redis, async () => {
        await expectStatus(api.checkout(bucket.id, a), 202);
        refused = (await api.checkout(bucket.id, b)).status === 429;
        await waitForOutboxEmpty(redis, bucket.id);
      });
      if (!refused) continue;
      throttledFirst = {
        outcome: "rate limited (first)",
        roundTrips: pair.roundTrips - accepted.roundTrips,
        redisCommands: pair.redisCommands - accepted.redisCommands,
      };
      await warmCost("rate limited (warm)", bucket.id, c, 429);
      break;
    }
    if (!throttledFirst) throw new Error(`b was never throttled right behind a, in ${throttled.length} tries`);
    costs.push(throttledFirst);

    // A sale in sizes: buying one is the same one script call; a sold-out size is refused warm.
    const acceptedSize = await measure(stack, redis, async () => {
      await expectStatus(api.checkout(sized.id, a, 1, "s"), 202);
      await waitForOutboxEmpty(redis, sized.id);
    });
    costs.push({
      outcome: "accepted (a variant)",
      ...acceptedSize,
      note: "includes 1 round trip of its settlement (outbox clear)",
    });
    await forgetAcceptedReplies();
    await warmCost("sold-out variant (warm)", sized.id, b, 409, "s");

    // A stampede: the isolate merges the buyers it holds into one script call per round trip.
    const crowdTokens = await Promise.all(Array.from({ length: 200 }, (_, i) => api.userToken(`${crowd.id}-rt-crowd-${i}`)));
    const stampede = await measure(stack, redis, async () => {
      await Promise.all(crowdTokens.map((t) => expectStatus(api.checkout(crowd.id, t), 202)));
      await waitForOutboxEmpty(redis, crowd.id);
    });
    costs.push({
      outcome: "accepted, 200 buyers at once (per buyer)",
      roundTrips: stampede.roundTrips / crowdTokens.length,
      redisCommands: stampede.redisCommands / crowdTokens.length,
      note: "merged script calls; includes settlement's outbox clears",
    });

    // A code holder in a presale lane: the code is checked, bound and spent in the same call.
    const acceptedCode = await measure(stack, redis, async () => {
      await expectStatus(api.checkoutWithCode(laned.id, a, firstCode as string), 202);
      await waitForOutboxEmpty(redis, laned.id);
    });
    costs.push({
      outcome: "accepted with an access code (a presale lane)",
      ...acceptedCode,
      note: "includes 1 round trip of its settlement (outbox clear)",
    });
    const holders = await Promise.all(crowdCodes.map((_, i) => api.userToken(`${laned.id}-rt-holder-${i}`)));
    const codeStampede = await measure(stack, redis, async () => {
      await Promise.all(holders.map((t, i) => expectStatus(api.checkoutWithCode(laned.id, t, crowdCodes[i] as string), 202)));
      await waitForOutboxEmpty(redis, laned.id);
    });
    costs.push({
      outcome: `accepted with codes, ${holders.length} holders at once (per buyer)`,
      roundTrips: codeStampede.roundTrips / holders.length,
      redisCommands: codeStampede.redisCommands / holders.length,
      note: "merged script calls carry the codes; includes settlement's outbox clears",
    });

    // 200 clients polling the sale page at once, twice, 600 ms apart, once its record is in
    // the cache (the first read after the sale's creation loads it from D1).
    const poll = () =>
      Promise.all(Array.from({ length: 200 }, () => stack.worker.fetch(`/api/sales/${sale.id}`).then((r) => r.arrayBuffer())));
    await poll();
    await new Promise((r) => setTimeout(r, 600));
    const started = performance.now();
    const polls = await measure(stack, redis, async () => {
      await poll();
      await new Promise((r) => setTimeout(r, 600));
      await poll();
    });
    costs.push({
      outcome: "sale page, 200 polls x 2 (600 ms apart)",
      ...polls,
      elapsedMs: performance.now() - started,
      note: "the isolate reads a sale page from Redis at most once per 500 ms",
    });
    return costs;
  } finally {
    redis.disconnect();
  }
}

/**
 * Waits until each sale's cached card was evicted the second time (its eviction floor, set
 * at the creation's first eviction, moves again), reading Redis directly.
 */
export async function waitForSecondEvictions(redis: IORedis, saleIds: string[]): Promise<void> {
  const floors = async () => Promise.all(saleIds.map((id) => redis.get(saleCardKeys(id).floor)));
  const first = await floors();
  const deadline = (EVICT_AGAIN_AFTER_SECONDS + 5) * 1_000;
  await eventually("the sales' second evictions", async () => (await floors()).every((floor, i) => floor !== first[i]), deadline);
}

/** Polls Redis directly (not through the gateway, which is counting). */
async function waitForOutboxEmpty(redis: IORedis, saleId: string): Promise<void> {
  await eventually("the orders to settle", async () => (await outboxSize(redis, saleId)) === 0, 5_000);
}
