// A million joiners at once, rehearsed on the local stack in bounded time: a fifo sale sized
// for its crowd (the bucket split the Worker gives a queued sale), the crowd joined straight
// into Redis with the Worker's own script and key lists (src/shared/keys.ts), pipelined, and
// `sampled` buyers spread over the line joining through the Worker: this machine cannot send a
// million requests through the Worker in minutes, and a join's Redis work is the same whoever
// sends it. Then the sale starts: the sampled buyers poll as the server tells them
// (retryAfterSec: every second near the front, up to 15 s far back), the few the front reaches
// within the polling time buy with their pass, and the settlement queue drains. Figures: joins a second (through the Worker, and into Redis), polls a second,
// Redis commands a second in each phase and per join and poll, and the largest record the
// sale left (MEMORY USAGE), against the record limit. `npm run model` extrapolates them.
import { Redis as IORedis } from "ioredis";
import type { Answer } from "../../dev/lib/api-client.ts";
import { totalCommands } from "../../dev/lib/redis-stats.ts";
import { mergedHash } from "../../dev/lib/sale-buckets.ts";
import type { Stack } from "../../dev/stack/local-stack.ts";
import { workerConfig } from "../../dev/stack/wrangler-cache.ts";
import type { QueuePosition } from "../../src/shared/api-types.ts";
import { type BucketSplit, bucketKeyOf, saleKeys, waitingRoomJoinCall } from "../../src/shared/keys.ts";
import { saleViolations } from "./invariants.ts";
import { fixed, formatTable } from "./table.ts";
import { acceptedSamples, queueViolations } from "./waiting-room-crowd.ts";
import { lua } from "./waiting-room-joins.ts";

export interface MillionOptions {
  /** Everyone who joins the line. */
  joiners: number;
  /** Of them, who joins, polls and buys through the Worker (spread over the line). */
  sampled: number;
  stock: number;
  admitPerSec: number;
  /** Sampled joins sent at once through the Worker; script calls per pipeline into Redis. */
  joinWidth?: number;
  pipeline?: number;
  /** How long the sampled buyers poll at most after the start (ms). */
  pollForMs?: number;
  progress?: (label: string) => void;
}

export interface PhaseFigures {
  count: number;
  seconds: number;
  perSec: number;
  /** Redis commands over the phase (INFO commandstats: every command a script runs), per second and per count. */
  redisCommandsPerSec: number;
  redisCommandsPer: number;
  /** Upstash commands as Upstash bills them (a script call is one), at the gateway: per second and per count. */
  upstashCommandsPerSec: number;
  upstashCommandsPer: number;
}

export interface MillionFigures {
  joiners: number;
  sampled: number;
  stock: number;
  buckets: number;
  recordLimitBytes: number;
  workerJoins: PhaseFigures;
  redisJoins: PhaseFigures;
  /** The sampled buyers' polls after the start (admissions and checkouts share the phase's commands). */
  polls: PhaseFigures;
  admitted: number;
  accepted: number;
  largestRecord: { key: string; bytes: number };
  /** Redis' memory after the joins (bytes): what the line costs a database. */
  usedMemoryBytes: number;
  seconds: number;
  violations: string[];
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * A phase's count, time and commands, over however many stretches it runs in: Redis' own, and
 * Upstash's at the gateway plus `direct` (script calls sent past the gateway, each one command
 * as Upstash bills it).
 */
function phaseMeter(stack: Stack, redis: IORedis) {
  let count = 0;
  let ms = 0;
  let redisCommands = 0;
  let upstashCommands = 0;
  return {
    async run(work: () => Promise<{ count: number; direct: number }>): Promise<void> {
      const redisBefore = await totalCommands(redis);
      const upstashBefore = (await stack.gateway.stats()).commands;
      const started = performance.now();
      const done = await work();
      ms += performance.now() - started;
      count += done.count;
      redisCommands += (await totalCommands(redis)) - redisBefore;
      upstashCommands += (await stack.gateway.stats()).commands - upstashBefore + done.direct;
    },
    figures(): PhaseFigures {
      const seconds = ms / 1000;
      return {
        count,
        seconds,
        perSec: count / seconds,
        redisCommandsPerSec: redisCommands / seconds,
        redisCommandsPer: redisCommands / Math.max(1, count),
        upstashCommandsPerSec: upstashCommands / seconds,
        upstashCommandsPer: upstashCommands / Math.max(1, count),
      };
    },
  };
}

/** The sale's split as D1 keeps it (the Worker's bucket of each buyer depends on its key). */
async function splitOf(stack: Stack, saleId: string): Promise<BucketSplit> {
  const [row] = await stack.worker.query<{ redis_buckets: number; bucket_key: string | null }>(
    "SELECT redis_buckets, bucket_key FROM sales WHERE id = ?",
    Number(saleId),
  );
  if (!row) throw new Error(`sale ${saleId} is not in D1`);
  return { count: row.redis_buckets, key: row.bucket_key === null ? null : bucketKeyOf(row.bucket_key) };
}

/** The sale's largest key by MEMORY USAGE. */
async function largestRecord(redis: IORedis, saleId: string): Promise<{ key: string; bytes: number }> {
  let largest = { key: "", bytes: 0 };
  const pattern = `${saleKeys(saleId).meta.split("}")[0]}}*`;
  for await (const keys of redis.scanStream({ match: pattern, count: 1_000 }) as AsyncIterable<string[]>) {
    const sizes = await Promise.all(keys.map((key) => redis.memory("USAGE", key)));
    sizes.forEach((bytes, i) => {
      if (Number(bytes) > largest.bytes) largest = { key: keys[i] as string, bytes: Number(bytes) };
    });
  }
  return largest;
}

export async function rehearseMillion(stack: Stack, options: MillionOptions): Promise<MillionFigures> {
  const { joiners, sampled, stock, admitPerSec, joinWidth = 20, pipeline = 1_000, pollForMs = 60_000, progress } = options;
  const { api } = stack;
  const started = performance.now();
  const redis = new IORedis(stack.redis.url);
  try {
    const sale = await api.createSale({
      name: `a line of ${joiners.toLocaleString("en-US")}`,
      stock,
      startsAt: new Date(Date.now() + 3_600_000).toISOString(),
      endsAt: new Date(Date.now() + 7_200_000).toISOString(),
      queue: { mode: "fifo", prequeueSec: 86_400, admitPerSec, passTtlSec: 60 },
    });
    const split = await splitOf(stack, sale.id);

    const rest = joiners - sampled;
    progress?.(
      `${rest.toLocaleString("en-US")} join straight into Redis (the Worker's script, ${pipeline} a pipeline), ${sampled} spread among them through the Worker`,
    );
    const joinSha = String(await redis.script("LOAD", lua("waiting-room-join")));
    const intoRedis = async (from: number, to: number) => {
      for (let i = from; i < to; i += pipeline) {
        const batch = redis.pipeline();
        for (let j = i; j < Math.min(to, i + pipeline); j++) {
          const { keys, args } = waitingRoomJoinCall(sale.id, `crowd-${sale.id}-${j}`, split, "", "person");
          batch.evalsha(joinSha, keys.length, ...keys, ...args);
        }
        for (const [err, reply] of (await batch.exec()) ?? []) {
          if (err || (reply as unknown[])[2] !== "JOINED") throw new Error(`a join into Redis: ${String(err ?? reply)}`);
        }
      }
      return { count: to - from, direct: to - from };
    };
    const buyers: { userId: string; token: string; ticket: string }[] = [];
    const throughWorker = async (from: number, to: number) => {
      const joined = await Promise.all(
        Array.from({ length: to - from }, async (_, j) => {
          const userId = `sampled-${sale.id}-${from + j}`;
          const token = await api.userToken(userId);
          const answer = await api.joinWaitingRoom(sale.id, token);
          if (!answer.body) throw new Error(`${userId} could not join: ${answer.status} ${answer.code}`);
          return { userId, token, ticket: answer.body.ticket };
        }),
      );
      buyers.push(...joined);
      return { count: joined.length, direct: 0 };
    };
    // Rounds of `joinWidth` sampled buyers at once, then the crowd's share, to the end of the line.
    const rounds = Math.ceil(sampled / joinWidth);
    const redisJoins = phaseMeter(stack, redis);
    const workerJoins = phaseMeter(stack, redis);
    for (let round = 0; round < rounds; round++) {
      await workerJoins.run(() => throughWorker(round * joinWidth, Math.min(sampled, (round + 1) * joinWidth)));
      await redisJoins.run(() => intoRedis(Math.floor((rest * round) / rounds), Math.floor((rest * (round + 1)) / rounds)));
      if (round % 10 === 9) progress?.(`  ${Math.floor((joiners * (round + 1)) / rounds).toLocaleString("en-US")} joined`);
    }
    const usedMemoryBytes = Number(/used_memory:(\d+)/.exec(await redis.info("memory"))?.[1] ?? 0);

    progress?.("the sale starts: the sampled buyers poll as told, those let in buy");
    const edit = await api.editSale(sale.id, { startsAt: new Date(Date.now() + 1_000).toISOString() });
    if (edit.status !== 200) throw new Error(`the sale could not be started: ${edit.status} ${edit.code}`);
    const accepted = new Map<string, string>();
    const failures: string[] = [];
    const giveUp = Date.now() + pollForMs;
    const polls = phaseMeter(stack, redis);
    await polls.run(async () => {
      let count = 0;
      await Promise.all(
        buyers.map(async (buyer) => {
          let turn: QueuePosition | undefined;
          while (Date.now() < giveUp) {
            const res = await api.pollQueue(sale.id, buyer.token, buyer.ticket);
            count++;
            if (res.status >= 500) failures.push(`a poll answered ${res.status} ${res.code}`);
            if (res.body && res.body.state !== "waiting") {
              turn = res.body;
              break;
            }
            await sleep(Math.min(giveUp - Date.now(), (res.body?.retryAfterSec ?? 1) * 1_000));
          }
          if (turn?.state !== "admitted" || !turn.pass) return;
          // A buyer turned away by a rate limit tries again a second later, while the pass lasts.
          let answer: Answer = await api.checkoutWithPass(sale.id, buyer.token, turn.pass);
          for (let retry = 0; answer.status === 429 && retry < 10; retry++) {
            await sleep(1_000);
            answer = await api.checkoutWithPass(sale.id, buyer.token, turn.pass);
          }
          if (answer.status === 202) accepted.set(buyer.userId, answer.orderId as string);
          else if (answer.status === 0 || answer.status >= 500)
            failures.push(`a checkout answered ${answer.status} ${answer.code}`);
        }),
      );
      return { count, direct: 0 };
    });

    progress?.("the settlement drains; the largest record");
    const passes = await mergedHash(redis, sale.id, "passes");
    const report = await stack.drain(sale.id, accepted.size);
    const violations = [
      ...queueViolations({ accepted, botAccepted: 0, passes }),
      ...saleViolations({ stock, samples: acceptedSamples(accepted), report, settled: await stack.settledOrders(sale.id) }),
      ...failures,
    ];
    return {
      joiners,
      sampled,
      stock,
      buckets: split.count,
      recordLimitBytes: Number(workerConfig().vars.REDIS_MAX_RECORD_BYTES),
      workerJoins: workerJoins.figures(),
      redisJoins: redisJoins.figures(),
      polls: polls.figures(),
      admitted: Object.keys(passes).length,
      accepted: accepted.size,
      largestRecord: await largestRecord(redis, sale.id),
      usedMemoryBytes,
      seconds: (performance.now() - started) / 1000,
      violations,
    };
  } finally {
    redis.disconnect();
  }
}

/** The rehearsal in words and a table. */
export function millionReport(f: MillionFigures): string {
  const row = (phase: string, p: PhaseFigures, unit: string) => ({
    phase,
    [unit]: p.count.toLocaleString("en-US"),
    seconds: fixed(p.seconds, 1),
    "a second": fixed(p.perSec, 0),
    "Upstash commands/s": fixed(p.upstashCommandsPerSec, 0),
    "Upstash commands each": fixed(p.upstashCommandsPer, 2),
    "Redis commands/s": fixed(p.redisCommandsPerSec, 0),
    "Redis commands each": fixed(p.redisCommandsPer, 2),
  });
  const mb = (bytes: number) => `${fixed(bytes / 1_048_576, 1)} MB`;
  return [
    `\nA line of ${f.joiners.toLocaleString("en-US")} joiners (${f.buckets} buckets), ${f.sampled} of them through the Worker; ${f.stock} units; ${fixed(f.seconds, 0)} s in all`,
    formatTable([
      row("joins through the Worker", f.workerJoins, "count"),
      row("joins straight into Redis (the same script)", f.redisJoins, "count"),
      row("polls after the start (admissions and checkouts included)", f.polls, "count"),
    ]),
    `let in ${f.admitted}, bought ${f.accepted}; the largest record: ${f.largestRecord.key} at ${mb(f.largestRecord.bytes)} (limit ${mb(f.recordLimitBytes)}); Redis holds ${mb(f.usedMemoryBytes)} after the joins`,
    "Upstash commands as Upstash bills them (a script call is one; at the gateway, and the direct joins' script calls); Redis commands as redis-server counts them (every command a script runs)",
    ...f.violations.map((v) => `VIOLATION million: ${v}`),
  ].join("\n");
}
