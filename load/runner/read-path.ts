// What the read path costs per page views, scenario by scenario and with each guard off:
// D1's queries (counted in the Worker by POST /lab/read-path), Upstash round trips (HTTP
// requests counted at the gateway) and Redis commands (INFO commandstats delta). The stack
// must run with LAB_ENABLED=true. `npm run bench` prints these figures.
import { Redis as IORedis } from "ioredis";
import { totalCommands } from "../../dev/lib/redis-stats.ts";
import type { Stack } from "../../dev/stack/local-stack.ts";
import type { CACHE_GUARDS } from "../../src/shared/requests.ts";

export interface ReadPathRow {
  page: "sale" | "catalog";
  scenario: "cold" | "warm" | "stale" | "absent";
  /** The guard turned off, or "" when all are on. */
  off: (typeof CACHE_GUARDS)[number] | "";
  views: number;
  d1Reads: number;
  roundTrips: number;
  redisCommands: number;
}

/** Each scenario with every guard on, then with the guard it exists for turned off. */
const RUNS: Omit<ReadPathRow, "views" | "d1Reads" | "roundTrips" | "redisCommands">[] = [
  { page: "sale", scenario: "warm", off: "" },
  { page: "sale", scenario: "cold", off: "" },
  { page: "sale", scenario: "cold", off: "rebuildOnce" },
  { page: "sale", scenario: "stale", off: "" },
  { page: "sale", scenario: "stale", off: "rebuildOnce" },
  { page: "sale", scenario: "absent", off: "" },
  { page: "sale", scenario: "absent", off: "bloom" },
  { page: "catalog", scenario: "warm", off: "" },
  { page: "catalog", scenario: "cold", off: "" },
  { page: "catalog", scenario: "stale", off: "" },
  { page: "catalog", scenario: "stale", off: "rebuildOnce" },
];

/**
 * `views` page views per run, each in an isolate of its own (no isolate memory helps: the
 * worst case for Redis and D1).
 */
export async function measureReadPath(stack: Stack, views = 1_000): Promise<ReadPathRow[]> {
  const redis = new IORedis(stack.redis.url);
  try {
    const sale = await stack.api.createSale({ name: "read path", description: "a sale read a thousand times" });
    // The cron fills the Bloom filter of sale ids (a new database has none yet); and a
    // change's second eviction (two seconds after it) must not land inside a run.
    await stack.worker.scheduled();
    await new Promise((r) => setTimeout(r, 3_000));
    const rows: ReadPathRow[] = [];
    for (const run of RUNS) {
      await stack.gateway.resetStats();
      const before = await totalCommands(redis);
      const figures = await stack.api.labReadPath({
        page: run.page,
        scenario: run.scenario,
        saleId: run.scenario === "absent" ? undefined : sale.id,
        views,
        off: run.off ? [run.off] : [],
      });
      const { requests } = await stack.gateway.stats();
      rows.push({
        ...run,
        views,
        d1Reads: figures.d1Reads,
        roundTrips: requests,
        redisCommands: (await totalCommands(redis)) - before,
      });
    }
    return rows;
  } finally {
    redis.disconnect();
  }
}
