// Admission, measured two ways on one stack:
// 1. where the sale's token bucket lives: @upstash/ratelimit's tokenBucket called before
//    the checkout script (its own round trip), or folded into lua/checkout.lua (none);
// 2. a spike through the Worker with and without admission.
import { readFileSync } from "node:fs";
import path from "node:path";
import { Ratelimit } from "@upstash/ratelimit";
import { Redis } from "@upstash/redis";
import { saleKeys } from "../../src/redis/keys.ts";
import type { Stack } from "../stack/local-stack.ts";
import { ROOT } from "../stack/worker.ts";
import { DEV_SECRETS } from "../tokens.ts";

const checkoutSource = readFileSync(path.join(ROOT, "lua", "checkout.lua"), "utf8");

export interface PlacementFigures {
  placement: string;
  attempts: number;
  roundTripsPerAttempt: number;
  attemptsPerSecond: number;
}

async function pool(total: number, concurrency: number, task: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await task(next++);
    }),
  );
}

export async function benchAdmissionPlacement(stack: Stack, attempts = 2_000, concurrency = 50): Promise<PlacementFigures[]> {
  // Auto-pipelining off: each attempt pays its own round trips, as one Worker request does.
  const redis = new Redis({
    url: stack.gateway.url,
    token: DEV_SECRETS.UPSTASH_REDIS_REST_TOKEN,
    enableTelemetry: false,
    enableAutoPipelining: false,
  });
  const script = redis.createScript(checkoutSource);
  const run = async (
    placement: string,
    attempt: (saleId: string, user: string) => Promise<unknown>,
  ): Promise<PlacementFigures> => {
    const sale = await stack.createSale({ stock: attempts, name: placement, admission: { rate: 100_000, burst: 1_000_000 } });
    const keys = saleKeys(sale.id);
    await script.exec([keys.meta, keys.buyers, keys.outbox, keys.admission], ["warm-up"]);
    await stack.gateway.resetStats();
    const started = performance.now();
    await pool(attempts, concurrency, (i) => attempt(sale.id, `${placement}-${i}`));
    const seconds = (performance.now() - started) / 1000;
    return {
      placement,
      attempts,
      roundTripsPerAttempt: (await stack.gateway.stats()).requests / attempts,
      attemptsPerSecond: Math.round(attempts / seconds),
    };
  };
  const limiter = new Ratelimit({ redis, limiter: Ratelimit.tokenBucket(100_000, "1 s", 1_000_000), prefix: "bench:admission" });
  const library = await run("@upstash/ratelimit, then the script", async (saleId, user) => {
    const { success } = await limiter.limit(saleId);
    if (!success) return;
    const keys = saleKeys(saleId);
    await script.exec([keys.meta, keys.buyers, keys.outbox, keys.admission], [user]);
  });
  const folded = await run("folded into checkout.lua", async (saleId, user) => {
    const keys = saleKeys(saleId);
    await script.exec([keys.meta, keys.buyers, keys.outbox, keys.admission], [user]);
  });
  return [library, folded];
}

const ARRIVALS_PER_TICK = 10;
const TICK_MS = 10;

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
  const tokens = await Promise.all(Array.from({ length: users }, (_, i) => stack.token(`spike-admission-${i}`)));
  const figures: SpikeFigures[] = [];
  for (const [label, admission] of [
    ["off (burst 1,000,000)", { rate: 100_000, burst: 1_000_000 }],
    ["on (500/s, burst 100)", { rate: 500, burst: 100 }],
  ] as const) {
    const sale = await stack.createSale({ stock: 300, name: `admission ${label}`, admission });
    await stack.gateway.resetStats();
    const started = performance.now();
    const pending: Promise<number>[] = [];
    for (let i = 0; i < tokens.length; i += ARRIVALS_PER_TICK) {
      for (const t of tokens.slice(i, i + ARRIVALS_PER_TICK)) pending.push(stack.checkout(sale.id, t).then((r) => r.status));
      await new Promise((r) => setTimeout(r, TICK_MS));
    }
    const statuses = await Promise.all(pending);
    figures.push({
      admission: label,
      requests: users,
      accepted: statuses.filter((s) => s === 202).length,
      rateLimited: statuses.filter((s) => s === 429).length,
      roundTrips: (await stack.gateway.stats()).requests,
      seconds: Number(((performance.now() - started) / 1000).toFixed(2)),
    });
  }
  return figures;
}
