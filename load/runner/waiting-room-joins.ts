// What one waiting-room join costs Redis, in commands (INFO commandstats: the EVALSHA and every
// command the script runs), on a sale split for a small crowd and on one split for a million:
// lua/waiting-room-join.lua names a fixed set of keys and reads running totals, so the two
// must cost the same. Against a throw-away redis-server, calling the scripts with the Worker's
// own key lists (src/shared/keys.ts), as src/admission/waiting-room.ts does.
import { readFileSync } from "node:fs";
import path from "node:path";
import { Redis } from "ioredis";
import { stripUpstashFlags } from "../../dev/gateway/scripts.ts";
import { ROOT } from "../../dev/lib/project.ts";
import { startRedisServer } from "../../dev/lib/redis-server.ts";
import { totalCommands } from "../../dev/lib/redis-stats.ts";
import {
  type BucketSplit,
  bucketKeyOf,
  bucketsFor,
  newBucketKey,
  PUBLIC_LINE,
  saleKeys,
  waitingRoomJoinCall,
  waitingRoomProgressKeys,
} from "../../src/shared/keys.ts";
import { drawKey } from "../../src/shared/waiting-room-draw.ts";

/** A script as redis-server takes it from a direct client: without the Upstash-only flag. */
export const lua = (name: string) => stripUpstashFlags(readFileSync(path.join(ROOT, "lua", `${name}.lua`), "utf8"));

/** A small Upstash plan's record limit: the one that splits a sale for a million joiners into thousands of buckets. */
export const SMALL_RECORD_LIMIT_BYTES = 256 * 1024;

export interface JoinCost {
  /** The crowd the sale is split for, and the bucket count that gives under the record limit. */
  joiners: number;
  buckets: number;
  /** Redis commands per join, averaged over `joins` joins of each kind. */
  fifo: number;
  /** A random sale's joiner before the start (the pre-queue). */
  preQueue: number;
  /** That joiner joining again after the start: its place, the sizes of the buckets before its own. */
  placedAfterStart: number;
  joins: number;
}

const SEED = "5eed".repeat(16);

/** The commands `work` cost Redis. */
async function commandsOf(redis: Redis, work: () => Promise<unknown>): Promise<number> {
  const before = await totalCommands(redis);
  await work();
  return (await totalCommands(redis)) - before;
}

/**
 * Measures the join on sales split for `joiners` under `recordLimitBytes`: `joins` fifo joins,
 * `joins` pre-queue joins of a random sale and their joins again once it started. Each sale's
 * running totals are written first by one progress call (as the Worker's first join of a sale
 * has them written), which is not counted: it is once per sale, not per join.
 */
export async function measureJoinCost(
  joinerCounts: readonly number[],
  { joins = 200, recordLimitBytes = SMALL_RECORD_LIMIT_BYTES } = {},
): Promise<JoinCost[]> {
  const server = await startRedisServer();
  const redis = new Redis(server.url, { lazyConnect: false });
  try {
    const load = async (name: string) => String(await redis.script("LOAD", lua(name)));
    const joinSha = await load("waiting-room-join");
    const progressSha = await load("waiting-room-progress");
    const syncSha = await load("sale-sync");
    let saleSeq = 0;
    const newSale = async (mode: "fifo" | "random", split: BucketSplit, startsIn: number) => {
      const id = `join-cost-${++saleSeq}`;
      const now = Date.now();
      const args = [1, 1_000_000, now + startsIn, now + 7_200_000, 1, 1e6, 1e6, "join cost", 1, "active"];
      const queue = [mode, now - 60_000, 1_000, 60, split.count, 0, "", ""];
      await redis.evalsha(syncSha, 1, saleKeys(id).meta, ...[...args, ...queue].map(String));
      await redis.evalsha(progressSha, ...progressCall(id, split.count));
      return id;
    };
    const progressCall = (saleId: string, buckets: number) => {
      const keys = waitingRoomProgressKeys(saleId, buckets);
      // Admits nobody (the cost measured is the join's); a grace and window as the defaults have them.
      return [keys.length, ...keys, "0", String(buckets), PUBLIC_LINE, "30000", "60000"] as const;
    };
    const join = async (saleId: string, split: BucketSplit, user: string, random: boolean) => {
      const key = random ? await drawKey(SEED, user) : "";
      const { keys, args } = waitingRoomJoinCall(saleId, user, split, key, "person");
      const reply = (await redis.evalsha(joinSha, keys.length, ...keys, ...args)) as unknown[];
      if (reply[2] !== "JOINED") throw new Error(`join: ${String(reply[2])}`);
    };
    const users = Array.from({ length: joins }, (_, i) => `joiner-${i}`);
    const perJoin = async (work: (user: string) => Promise<void>) => {
      // One at a time: the figure is per join, whatever the client would pipeline.
      const commands = await commandsOf(redis, async () => {
        for (const user of users) await work(user);
      });
      return commands / joins;
    };
    const costs: JoinCost[] = [];
    for (const joiners of joinerCounts) {
      const split = { count: bucketsFor(joiners, recordLimitBytes, false), key: bucketKeyOf(newBucketKey()) };
      const fifoSale = await newSale("fifo", split, -1_000);
      const fifo = await perJoin((user) => join(fifoSale, split, user, false));
      const randomSale = await newSale("random", split, 3_600_000);
      const preQueue = await perJoin((user) => join(randomSale, split, user, true));
      await redis.hset(saleKeys(randomSale).meta, "starts", String(Date.now() - 1));
      const placedAfterStart = await perJoin((user) => join(randomSale, split, user, true));
      costs.push({ joiners, buckets: split.count, fifo, preQueue, placedAfterStart, joins });
    }
    return costs;
  } finally {
    redis.disconnect();
    await server.stop();
  }
}
