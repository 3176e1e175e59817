// A sale's big keys at 1,000 and 1,000,000 buyers, on a redis-server of their own (RESP through
// ioredis, no gateway, no Worker: these are Redis' own costs, and the million-field keys never
// weigh on another section):
// 1. memory (MEMORY USAGE, every field counted) of the buyers hash and of the hash of checkout
//    Idempotency-Keys, both as large as the crowd by the sale's end, and of the outbox and
//    pending records a settlement backlog of as many orders would hold (worst case: normally
//    they hold only the orders of the last moments);
// 2. lua/checkout.lua against that sale: one new buyer per call, and 100 per call (a merged
//    call), latency at the client and Redis' own time per call (SLOWLOG);
// 3. removing a buyers hash of that size: one DEL, one UNLINK, or lua/purge-chunk.lua 500
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
import { checkoutScriptKeys, saleKeys } from "../../src/shared/keys.ts";
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
  buyersBytes: number;
  checkoutKeysBytes: number;
  backlogBytes: number;
  /** The largest single record among them (Upstash's limit is per record), with its key's role. */
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
  memory: MemoryFigures[];
  checkout: CheckoutFigures[];
  removal: RemovalFigures[];
}

/** Issues `command key ...args` in commands of FILL_FIELDS entries, FILL_IN_FLIGHT at a time. */
async function fill(redis: IORedis, command: "hset" | "zadd", key: string, n: number, entry: (i: number) => [string, string]) {
  let pipeline = redis.pipeline();
  let queued = 0;
  for (let first = 0; first < n; first += FILL_FIELDS) {
    const args: string[] = [];
    for (let i = first; i < Math.min(n, first + FILL_FIELDS); i++) args.push(...entry(i));
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

async function loadSale(redis: IORedis, saleId: string, buyers: number) {
  const keys = saleKeys(saleId);
  const now = Date.now();
  // Room for the calls below; admission far above what one client sends.
  await redis.eval(
    lua("sale-sync"),
    1,
    keys.meta,
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
  );
  await redis.hset(keys.meta, "remaining", 1_000_000, "seq", buyers);
  const started = performance.now();
  await fill(redis, "hset", keys.buyers, buyers, (i) => [userId(i), `1:${orderId(i)}`]);
  await fill(redis, "hset", keys.checkoutKeys, buyers, (i) => [`${userId(i)}\n${randomUUID()}`, `${orderId(i)}:1`]);
  const fillMs = performance.now() - started;
  const usage = async (key: string) => Number(await redis.memory("USAGE", key, "SAMPLES", 0));
  const memory: MemoryFigures = {
    buyers,
    buyersBytes: await usage(keys.buyers),
    checkoutKeysBytes: await usage(keys.checkoutKeys),
    backlogBytes: 0,
    largest: { key: "", bytes: 0 },
    fillMs,
  };
  // A backlog: as many orders in the outbox and pending records, measured, then dropped.
  await fill(redis, "zadd", keys.outbox, buyers, (i) => [String(now), orderId(i)]);
  await fill(redis, "hset", keys.pending, buyers, (i) => [orderId(i), `1:${userId(i)}`]);
  const [outboxBytes, pendingBytes] = [await usage(keys.outbox), await usage(keys.pending)];
  memory.backlogBytes = outboxBytes + pendingBytes;
  const records: [string, number][] = [
    ["buyers", memory.buyersBytes],
    ["checkout keys", memory.checkoutKeysBytes],
    ["outbox (backlog)", outboxBytes],
    ["pending (backlog)", pendingBytes],
  ];
  const [key, bytes] = records.reduce((a, b) => (b[1] > a[1] ? b : a));
  memory.largest = { key, bytes };
  await redis.unlink(keys.outbox, keys.pending);
  return memory;
}

async function measureCheckout(redis: IORedis, saleId: string, buyers: number): Promise<CheckoutFigures> {
  const keyList = checkoutScriptKeys(saleId, Math.floor(Date.now() / 60_000));
  const sha = String(await redis.script("LOAD", lua("checkout")));
  const run = async (calls: number, perCall: number, tag: string) => {
    await slowlogEverything(redis);
    const client: number[] = [];
    for (let call = 0; call < calls; call++) {
      const args: string[] = [];
      for (let b = 0; b < perCall; b++) args.push(`${tag}-${call}-${b}`, "1", randomUUID());
      const sent = performance.now();
      const reply = (await redis.evalsha(sha, keyList.length, ...keyList, ...args)) as unknown[];
      client.push(performance.now() - sent);
      // Header of 8 fields, then 4 per buyer, the outcome first: every buyer must be reserved.
      const refused = reply.filter((field, i) => i >= 8 && (i - 8) % 4 === 0 && field !== "OK");
      if (refused.length > 0) throw new Error(`checkout.lua answered ${String(refused[0])} on a sale of ${buyers} buyers`);
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

async function measureRemovals(redis: IORedis, url: string, saleId: string, buyers: number): Promise<RemovalFigures[]> {
  const source = saleKeys(saleId).buyers;
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

export async function benchBigKeys(progress: (label: string) => void, sizes = [1_000, 1_000_000]): Promise<BigKeyFigures> {
  const server = await startRedisServer();
  const redis = new IORedis(server.url);
  const figures: BigKeyFigures = { memory: [], checkout: [], removal: [] };
  try {
    for (const buyers of sizes) {
      const saleId = `bench-big-keys-${buyers}`;
      progress(`big keys: a sale of ${buyers} buyers (filling its keys)`);
      figures.memory.push(await loadSale(redis, saleId, buyers));
      // Removal first, on copies of the hash as filled; checkout then adds buyers to it.
      progress(`big keys: removing a ${buyers}-field buyers hash three ways, ${REMOVAL_ROUNDS} times each`);
      figures.removal.push(...(await measureRemovals(redis, server.url, saleId, buyers)));
      progress(`big keys: checkout.lua at ${buyers} buyers`);
      figures.checkout.push(await measureCheckout(redis, saleId, buyers));
      await redis.flushall();
    }
  } finally {
    redis.disconnect();
    await server.stop();
  }
  return figures;
}
