// A sale's big keys at 1,000 and 1,000,000 buyers, on a redis-server of their own (RESP through
// ioredis, no gateway, no Worker: these are Redis' own costs, and the million-field keys never
// weigh on another section). The sale is split into buckets as a sale of that stock is under
// the record limit given (src/shared/keys.ts, bucketsFor), each buyer in the bucket the Worker
// would put them in:
// 1. memory (MEMORY USAGE, every field counted) of the buyers hashes and of the hashes of checkout
//    Idempotency-Keys, as large as the crowd by the sale's end, and of the outbox and pending
//    records a settlement backlog of as many orders would hold (worst case: normally they hold
//    only the orders of the last moments): each structure whole (all its buckets together, what
//    one unsplit key would hold) and the largest single record (one bucket's key);
// 2. lua/checkout.lua against that sale: one new buyer per call, and 100 per call (a merged
//    call), latency at the client and Redis' own time per call (SLOWLOG);
// 3. removing one bucket's buyers hash: one DEL, one UNLINK, or lua/purge-chunk.lua 500
//    fields per call (the clean-up's way) or 1,000: commands, total time, Redis' own time for the
//    commands (SLOWLOG: p99 and longest) and the longest wait of another client sending PING
//    all along; the median of three rounds.
// The keys are filled with pipelined HSET/ZADD of 1,000 fields per command, not through checkout.
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { Redis as IORedis } from "ioredis";
import { stripUpstashFlags } from "../../dev/gateway/scripts.ts";
import { ROOT } from "../../dev/lib/project.ts";
import { startRedisServer } from "../../dev/lib/redis-server.ts";
import { parseCheckoutReply } from "../../src/shared/checkout-reply.ts";
import {
  allBuckets,
  type BucketKeys,
  bucketKeyOf,
  bucketKeys,
  bucketOf,
  bucketsFor,
  checkoutScriptKeys,
  newBucketKey,
  saleKeys,
} from "../../src/shared/keys.ts";
import { type LatencyFigures, latencyFigures } from "../runner/stats.ts";

/** A script as redis-server 7.0 takes it: without the Upstash-only flag this bench's direct client cannot send. */
const lua = (name: string) => stripUpstashFlags(readFileSync(path.join(ROOT, "lua", `${name}.lua`), "utf8"));

/** Fields per HSET/ZADD while filling, and commands per pipeline. */
const FILL_FIELDS = 1_000;
const FILL_IN_FLIGHT = 50;
/** The clean-up's chunk (src/sales/purge.ts PURGE_CHUNK), and twice it. */
const CHUNKS = [500, 1_000];
const SINGLE_CALLS = 2_000;
const MERGED_CALLS = 100;
const MERGED_BUYERS = 100;

// What a real sale writes: shop user ids (20 characters here), 19-digit order ids, and the
// storefront's Idempotency-Keys (UUIDs).
const userId = (i: number) => `shopper-${String(i).padStart(12, "0")}`;
const orderId = (i: number) => String(7_000_000_000_000_000_000n + BigInt(i));

export interface MemoryFigures {
  buyers: number;
  /** How many buckets the sale is split into under the record limit. */
  buckets: number;
  /** Each structure whole: all its buckets together (what one unsplit key would hold). */
  buyersBytes: number;
  checkoutKeysBytes: number;
  backlogBytes: number;
  /** The largest structure whole: the largest record the sale would hold unsplit. */
  largestWhole: { key: string; bytes: number };
  /** The largest single record of the split sale (Upstash's limit is per record), with its key's role. */
  largest: { key: string; bytes: number };
  fillMs: number;
}

export interface CheckoutFigures {
  buyers: number;
  single: { client: LatencyFigures; redisUs: LatencyFigures };
  merged: { client: LatencyFigures; redisUs: LatencyFigures };
}

export interface RemovalFigures {
  buyers: number;
  /** Fields of the bucket's buyers hash removed. */
  fields: number;
  how: string;
  commands: number;
  /** The median over REMOVAL_ROUNDS rounds of each figure below. */
  totalMs: number;
  /** Redis' own time (SLOWLOG), ms: all commands together, the median one, the 99th percentile and the longest. */
  redisTotalMs: number;
  p50CommandMs: number;
  p99CommandMs: number;
  longestCommandMs: number;
  /** The longest a concurrent PING waited for its answer, ms. */
  longestPingMs: number;
}

/**
 * Each removal is measured this many times and the median kept: on shared cores the
 * scheduler alone can stall any one command for a few milliseconds.
 */
const REMOVAL_ROUNDS = 3;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] as number;

export interface BigKeyFigures {
  /** The record limit the sales were split for (bytes). */
  recordLimitBytes: number;
  memory: MemoryFigures[];
  checkout: CheckoutFigures[];
  removal: RemovalFigures[];
}

/** Issues `command key ...args` for the buyers `indices`, in commands of FILL_FIELDS entries, FILL_IN_FLIGHT at a time. */
async function fill(
  redis: IORedis,
  command: "hset" | "zadd",
  key: string,
  indices: number[],
  entry: (i: number) => [string, string],
) {
  let pipeline = redis.pipeline();
  let queued = 0;
  for (let first = 0; first < indices.length; first += FILL_FIELDS) {
    const args: string[] = [];
    for (const i of indices.slice(first, first + FILL_FIELDS)) args.push(...entry(i));
    pipeline.call(command, key, ...args);
    if (++queued === FILL_IN_FLIGHT) {
      await pipeline.exec();
      pipeline = redis.pipeline();
      queued = 0;
    }
  }
  if (queued > 0) await pipeline.exec();
}

/** SLOWLOG with every command in it (threshold 0), emptied. */
async function slowlogEverything(redis: IORedis) {
  await redis.config("SET", "slowlog-log-slower-than", "0");
  await redis.config("SET", "slowlog-max-len", "200000");
  await redis.slowlog("RESET");
}

/** Redis' own time (µs) of each logged command named `name`, oldest first. */
async function slowlogTimes(redis: IORedis, name: string): Promise<number[]> {
  const entries = (await redis.slowlog("GET", "-1")) as [number, number, number, string[]][];
  return entries
    .filter((e) => String(e[3][0]).toUpperCase() === name)
    .map((e) => Number(e[2]))
    .reverse();
}

/** PING in a loop on its own connection until stopped; the longest wait, ms. */
function pingAllAlong(url: string) {
  const prober = new IORedis(url);
  let stop = false;
  let longest = 0;
  const loop = (async () => {
    while (!stop) {
      const sent = performance.now();
      await prober.ping();
      longest = Math.max(longest, performance.now() - sent);
    }
  })();
  return async () => {
    stop = true;
    await loop;
    prober.disconnect();
    return longest;
  };
}

/** The bench's sales are split as a new sale is: under a random key of their own. */
const splitOf = (buckets: number) => ({ count: buckets, key: bucketKeyOf(newBucketKey()) });

/** Buyers 0..n-1 by the bucket (of `buckets`) the Worker puts each in. */
function buyersByBucket(n: number, buckets: number): number[][] {
  const groups: number[][] = Array.from({ length: buckets }, () => []);
  const split = splitOf(buckets);
  for (let i = 0; i < n; i++) groups[bucketOf(userId(i), split)]?.push(i);
  return groups;
}

/** Fills one structure (`role` of every bucket) and measures it: whole (the sum) and its largest record. */
async function fillStructure(
  redis: IORedis,
  buckets: BucketKeys[],
  groups: number[][],
  role: keyof BucketKeys,
  command: "hset" | "zadd",
  entry: (i: number) => [string, string],
): Promise<{ whole: number; largest: number }> {
  const usage = async (key: string) => Number(await redis.memory("USAGE", key, "SAMPLES", 0));
  let whole = 0;
  let largest = 0;
  for (const [b, keys] of buckets.entries()) {
    await fill(redis, command, keys[role], groups[b] ?? [], entry);
    const bytes = await usage(keys[role]);
    whole += bytes;
    largest = Math.max(largest, bytes);
  }
  return { whole, largest };
}

async function loadSale(redis: IORedis, saleId: string, buyers: number, recordLimitBytes: number) {
  const meta = saleKeys(saleId).meta;
  const bucketCount = bucketsFor(buyers, recordLimitBytes, false); // no waiting room
  const buckets = allBuckets(saleId, bucketCount);
  const now = Date.now();
  // Room for the calls below; admission far above what one client sends.
  await redis.eval(
    lua("sale-sync"),
    1,
    meta,
    1,
    buyers + 1_000_000,
    now - 1_000,
    now + 3_600_000,
    1,
    1e9,
    1e9,
    "bench",
    1,
    "active",
    "off", // no waiting room
    0,
    1,
    30,
    bucketCount,
    0, // not a draw
    "", // no lanes
    "",
  );
  await redis.hset(meta, "remaining", 1_000_000, "seq", buyers);
  const groups = buyersByBucket(buyers, bucketCount);
  const started = performance.now();
  const buyersHash = await fillStructure(redis, buckets, groups, "buyers", "hset", (i) => [userId(i), `1:${orderId(i)}`]);
  const checkoutKeys = await fillStructure(redis, buckets, groups, "checkoutKeys", "hset", (i) => [
    `${userId(i)}\n${randomUUID()}`,
    `${orderId(i)}:1`,
  ]);
  const fillMs = performance.now() - started;
  // A backlog: as many orders in the outbox and pending records, measured, then dropped.
  const outbox = await fillStructure(redis, buckets, groups, "outbox", "zadd", (i) => [String(now), orderId(i)]);
  const pending = await fillStructure(redis, buckets, groups, "pending", "hset", (i) => [orderId(i), `1:${userId(i)}`]);
  const structures: [string, { whole: number; largest: number }][] = [
    ["buyers", buyersHash],
    ["checkout keys", checkoutKeys],
    ["outbox (backlog)", outbox],
    ["pending (backlog)", pending],
  ];
  const largestBy = (figure: "whole" | "largest") => {
    const [key, sizes] = structures.reduce((a, b) => (b[1][figure] > a[1][figure] ? b : a));
    return { key, bytes: sizes[figure] };
  };
  const memory: MemoryFigures = {
    buyers,
    buckets: bucketCount,
    buyersBytes: buyersHash.whole,
    checkoutKeysBytes: checkoutKeys.whole,
    backlogBytes: outbox.whole + pending.whole,
    largestWhole: largestBy("whole"),
    largest: largestBy("largest"),
    fillMs,
  };
  await redis.unlink(...buckets.flatMap((k) => [k.outbox, k.pending]));
  return memory;
}

async function measureCheckout(redis: IORedis, saleId: string, buyers: number, buckets: number): Promise<CheckoutFigures> {
  const minute = Math.floor(Date.now() / 60_000);
  const split = splitOf(buckets);
  const sha = String(await redis.script("LOAD", lua("checkout")));
  const run = async (calls: number, perCall: number, tag: string) => {
    await slowlogEverything(redis);
    const client: number[] = [];
    for (let call = 0; call < calls; call++) {
      const users = Array.from({ length: perCall }, (_, b) => `${tag}-${call}-${b}`);
      // As src/checkout/reserve.ts sends it: the call names only its buyers' buckets.
      const { keys, bucketSlots } = checkoutScriptKeys(saleId, minute, split, users);
      const args = users.flatMap((user, b) => [user, "1", randomUUID(), "", String(bucketSlots[b]), "", ""]);
      const sent = performance.now();
      const reply = await redis.evalsha(sha, keys.length, ...keys, String(buckets), "0", "", ...args);
      client.push(performance.now() - sent);
      // Read as the Worker reads it: every buyer must be reserved.
      const refused = parseCheckoutReply(reply, users.length).reservations?.find((r) => r.code !== "OK");
      if (refused) throw new Error(`checkout.lua answered ${refused.code} on a sale of ${buyers} buyers`);
    }
    return { client: latencyFigures(client), redisUs: latencyFigures(await slowlogTimes(redis, "EVALSHA")) };
  };
  return { buyers, single: await run(SINGLE_CALLS, 1, "single"), merged: await run(MERGED_CALLS, MERGED_BUYERS, "merged") };
}

/** One way of removing a copy of the sale's buyers hash, timed, with its commands' times and the longest PING wait. */
async function removeOnce(
  redis: IORedis,
  url: string,
  source: string,
  how: string,
  remove: (key: string) => Promise<{ commands: number; logged: string }>,
) {
  const victim = `${source}:copy`;
  await redis.copy(source, victim, "REPLACE");
  await slowlogEverything(redis);
  const stopPinging = pingAllAlong(url);
  await new Promise((resolve) => setTimeout(resolve, 20)); // the prober is connected and pinging
  const started = performance.now();
  const { commands, logged } = await remove(victim);
  const totalMs = performance.now() - started;
  const longestPingMs = await stopPinging();
  if ((await redis.exists(victim)) !== 0) throw new Error(`${how} left ${victim} behind`);
  const ms = (await slowlogTimes(redis, logged)).map((us) => us / 1000);
  const times = latencyFigures(ms);
  return {
    commands,
    totalMs,
    redisTotalMs: ms.reduce((a, b) => a + b, 0),
    p50CommandMs: times.p50,
    p99CommandMs: times.p99,
    longestCommandMs: times.max,
    longestPingMs,
  };
}

async function measureRemovals(
  redis: IORedis,
  url: string,
  saleId: string,
  buyers: number,
  buckets: number,
): Promise<RemovalFigures[]> {
  const source = bucketKeys(saleId, 0, buckets).buyers;
  const fields = await redis.hlen(source);
  const purgeSha = String(await redis.script("LOAD", lua("purge-chunk")));
  const ways: [string, (key: string) => Promise<{ commands: number; logged: string }>][] = [
    [
      "one DEL",
      async (key) => {
        await redis.del(key);
        return { commands: 1, logged: "DEL" };
      },
    ],
    [
      "one UNLINK (freed in the background)",
      async (key) => {
        await redis.unlink(key);
        return { commands: 1, logged: "UNLINK" };
      },
    ],
    ...CHUNKS.map((chunk): [string, (key: string) => Promise<{ commands: number; logged: string }>] => [
      `purge-chunk.lua, ${chunk} fields a call`,
      async (key) => {
        let cursor = "0";
        let commands = 0;
        for (;;) {
          const [next, , exists] = (await redis.evalsha(purgeSha, 1, key, cursor, chunk)) as [string, number, number];
          commands++;
          if (Number(exists) === 0) return { commands, logged: "EVALSHA" };
          cursor = String(next);
        }
      },
    ]),
  ];
  const figures: RemovalFigures[] = [];
  for (const [how, remove] of ways) {
    const rounds: Awaited<ReturnType<typeof removeOnce>>[] = [];
    for (let round = 0; round < REMOVAL_ROUNDS; round++) rounds.push(await removeOnce(redis, url, source, how, remove));
    const of = (figure: keyof (typeof rounds)[number]) => median(rounds.map((r) => r[figure]));
    figures.push({
      buyers,
      fields,
      how,
      commands: of("commands"),
      totalMs: of("totalMs"),
      redisTotalMs: of("redisTotalMs"),
      p50CommandMs: of("p50CommandMs"),
      p99CommandMs: of("p99CommandMs"),
      longestCommandMs: of("longestCommandMs"),
      longestPingMs: of("longestPingMs"),
    });
  }
  return figures;
}

/** The sales split for `recordLimitBytes` (REDIS_MAX_RECORD_BYTES), at each of `sizes` buyers. */
export async function benchBigKeys(
  progress: (label: string) => void,
  recordLimitBytes: number,
  sizes = [1_000, 1_000_000],
): Promise<BigKeyFigures> {
  const server = await startRedisServer();
  const redis = new IORedis(server.url);
  const figures: BigKeyFigures = { recordLimitBytes, memory: [], checkout: [], removal: [] };
  try {
    for (const buyers of sizes) {
      const saleId = `bench-big-keys-${buyers}`;
      progress(`big keys: a sale of ${buyers} buyers (filling its keys)`);
      const memory = await loadSale(redis, saleId, buyers, recordLimitBytes);
      figures.memory.push(memory);
      // Removal first, on copies of the hash as filled; checkout then adds buyers to it.
      progress(`big keys: removing one bucket's buyers hash three ways, ${REMOVAL_ROUNDS} times each`);
      figures.removal.push(...(await measureRemovals(redis, server.url, saleId, buyers, memory.buckets)));
      progress(`big keys: checkout.lua at ${buyers} buyers`);
      figures.checkout.push(await measureCheckout(redis, saleId, buyers, memory.buckets));
      await redis.flushall();
    }
  } finally {
    redis.disconnect();
    await server.stop();
  }
  return figures;
}
