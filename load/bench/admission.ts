// Admission, measured two ways on one stack:
// 1. where the sale's token bucket lives: @upstash/ratelimit's tokenBucket called before
//    the checkout script (its own round trip), or folded into lua/checkout.lua (none);
// 2. a spike through the Worker with and without admission.
import { readFileSync } from "node:fs";
import path from "node:path";
import { Ratelimit } from "@upstash/ratelimit";
import { Redis } from "@upstash/redis";
import { ROOT } from "../../dev/lib/project.ts";
import type { Stack } from "../../dev/stack/local-stack.ts";
import { checkoutScriptKeys, ONE_BUCKET } from "../../src/shared/keys.ts";
import { drive, planCrowd, type Shot } from "../runner/crowd.ts";

const checkoutSource = readFileSync(path.join(ROOT, "lua", "checkout.lua"), "utf8");

/** lua/checkout.lua's KEYS and ARGV for one buyer of one unit, as src/checkout/reserve.ts passes them (the bench's sales are one bucket). */
function checkoutCall(saleId: string, user: string): [string[], string[]] {
  const { keys, bucketSlots } = checkoutScriptKeys(saleId, Math.floor(Date.now() / 60_000), ONE_BUCKET, [user]);
  // The bucket count, the access codes' key count and the lane's line (none), then one septuple:
  // user, quantity, Idempotency-Key, pass place, bucket slot, access code, traceparent.
  return [keys, [String(ONE_BUCKET.count), "0", "", user, "1", "", "", String(bucketSlots[0]), "", ""]];
}

export interface PlacementFigures {
  placement: string;
  attempts: number;
  roundTripsPerAttempt: number;
  attemptsPerSecond: number;
}

export async function benchAdmissionPlacement(stack: Stack, attempts = 2_000, concurrency = 50): Promise<PlacementFigures[]> {
  // Auto-pipelining off: each attempt pays its own round trips, as one Worker request does.
  const redis = new Redis({
    url: stack.gateway.url,
    token: stack.gateway.token,
    enableTelemetry: false,
    enableAutoPipelining: false,
  });
  const script = redis.createScript(checkoutSource);
  const run = async (
    placement: string,
    attempt: (saleId: string, user: string) => Promise<unknown>,
  ): Promise<PlacementFigures> => {
    const sale = await stack.api.createSale({ stock: attempts, name: placement });
    await script.exec(...checkoutCall(sale.id, "warm-up"));
    await stack.gateway.resetStats();
    const shots: Shot[] = Array.from({ length: attempts }, (_, i) => ({ userId: `${placement}-${i}`, token: "" }));
    const { durationMs } = await drive(
      shots,
      async (shot) => {
        await attempt(sale.id, shot.userId);
        return { status: 200, code: "DONE" };
      },
      { concurrency },
    );
    return {
      placement,
      attempts,
      roundTripsPerAttempt: (await stack.gateway.stats()).requests / attempts,
      attemptsPerSecond: Math.round((attempts * 1000) / durationMs),
    };
  };
  const limiter = new Ratelimit({ redis, limiter: Ratelimit.tokenBucket(100_000, "1 s", 1_000_000), prefix: "bench:admission" });
  const library = await run("@upstash/ratelimit, then the script", async (saleId, user) => {
    const { success } = await limiter.limit(saleId);
    if (!success) return;
    await script.exec(...checkoutCall(saleId, user));
  });
  const folded = await run("folded into checkout.lua", async (saleId, user) => {
    await script.exec(...checkoutCall(saleId, user));
  });
  return [library, folded];
}

export interface SpikeFigures {
  admission: string;
  requests: number;
  accepted: number;
  rateLimited: number;
  roundTrips: number;
  seconds: number;
}

/** The same spike through the Worker: 2,000 distinct users arriving at 1,000/s on 300 units. */
export async function benchAdmissionSpike(stack: Stack, users = 2_000): Promise<SpikeFigures[]> {
  const shots = await planCrowd(stack.api, users, 1, "spike-admission-");
  const figures: SpikeFigures[] = [];
  for (const [label, admission] of [
    ["off (burst 1,000,000)", { rate: 100_000, burst: 1_000_000 }],
    ["on (500/s, burst 100)", { rate: 500, burst: 100 }],
  ] as const) {
    const sale = await stack.api.createSale({ stock: 300, name: `admission ${label}`, admission });
    await stack.gateway.resetStats();
    const { samples, durationMs } = await drive(shots, (shot) => stack.api.checkout(sale.id, shot.token), { ratePerSec: 1_000 });
    figures.push({
      admission: label,
      requests: users,
      accepted: samples.filter((s) => s.status === 202).length,
      rateLimited: samples.filter((s) => s.status === 429).length,
      roundTrips: (await stack.gateway.stats()).requests,
      seconds: Number((durationMs / 1000).toFixed(2)),
    });
  }
  return figures;
}
