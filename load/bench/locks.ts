// The lock library (src/locks/) against its TypeScript peers on the stack's own servers:
// 1. round trips per acquire and release of each lock kind, counted at the gateways (Redis
//    commands for the RESP peer);
// 2. 50 contenders on one key, each 20 times: acquire, 2 ms of work, release. Ours fair and
//    unfair, @upstash/lock through the same gateway (at its defaults, and tuned never to give
//    up), @sesamecare-oss/redlock over RESP on the same redis-server (tuned likewise); bare,
//    then over a --hop-ms hop (the gateway's emulated latency; a delaying TCP proxy for RESP);
// 3. a holder paused past its lease: which ones let its late write through to D1.

import { Redlock } from "@sesamecare-oss/redlock";
import { Lock as UpstashLock } from "@upstash/lock";
import { Redis } from "@upstash/redis";
import { Redis as IORedis } from "ioredis";
import { commandStat } from "../../dev/lib/redis-stats.ts";
import type { Stack } from "../../dev/stack/local-stack.ts";
import {
  ExpirableSemaphore,
  fencedBatch,
  type Lease,
  Lock,
  MultiLock,
  QuorumLock,
  ReentrantLock,
  StaleFenceError,
} from "../../src/locks/index.ts";
import { latencyFigures } from "../runner/stats.ts";
import { startTcpHop } from "./tcp-hop.ts";

const CONTENDERS = 50;
const ROUNDS = 20;

/** How many contend for the one key, each how many times. */
export interface ContentionSize {
  contenders: number;
  rounds: number;
}
const WORK_MS = 2;
const LEASE_MS = 10_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const unique = (what: string) => `bench:${what}:${Date.now().toString(36)}:${Math.random().toString(36).slice(2, 8)}`;
const restClient = (stack: Stack, url = stack.gateway.url) =>
  new Redis({ url, token: stack.gateway.token, enableTelemetry: false, automaticDeserialization: false });
/** The stack's redis-server URL, or the same server behind `port` (a hop). */
const respUrl = (stack: Stack, port?: number) =>
  port === undefined ? stack.redis.url : stack.redis.url.replace(/:(\d+)$/, `:${port}`);

// 1. Round trips ----------------------------------------------------------------------------

export interface RoundTripRow {
  lock: string;
  acquire: number;
  release: number;
  note: string;
}

/** Requests counted at the given gateways while `action` runs. */
async function requestsAt(gateways: Stack["gateway"][], action: () => Promise<unknown>): Promise<number> {
  await Promise.all(gateways.map((g) => g.resetStats()));
  await action();
  const stats = await Promise.all(gateways.map((g) => g.stats()));
  return stats.reduce((n, s) => n + s.requests, 0);
}

async function roundTrips(stack: Stack): Promise<RoundTripRow[]> {
  const redis = restClient(stack);
  const quorumNodes = stack.quorum.map((node) => restClient(stack, node.gateway.url));
  const main = [stack.gateway];
  const rows: RoundTripRow[] = [];
  /** Runs `take` then `give` twice (the first run loads the scripts) and counts the second. */
  const measure = async <T>(
    lock: string,
    gateways: Stack["gateway"][],
    take: () => Promise<T>,
    give: (held: T) => Promise<unknown>,
    note = "",
  ) => {
    await give(await take());
    let held: T | undefined;
    const acquire = await requestsAt(gateways, async () => {
      held = await take();
    });
    const release = await requestsAt(gateways, () => give(held as T));
    rows.push({ lock, acquire, release, note });
  };

  await measure(
    "Lock",
    main,
    async () => (await new Lock(redis, unique("rt")).tryAcquire({ leaseMs: LEASE_MS })) as Lease,
    (lease) => lease.release(),
    "fencing token minted in the same script",
  );
  const contended = unique("rt-contended");
  await measure(
    "Lock, a waiter",
    main,
    async () => {
      const holder = (await new Lock(redis, contended).tryAcquire({ leaseMs: LEASE_MS })) as Lease;
      setTimeout(() => void holder.release(), 100);
      return (await new Lock(redis, contended).tryAcquire({ leaseMs: LEASE_MS, waitMs: 5_000 })) as Lease;
    },
    (lease) => lease.release(),
    "the holder's acquire and release plus the waiter's attempt; the hand-over costs the waiter nothing more",
  );
  const reentrant = new ReentrantLock(redis, unique("rt-reentrant"));
  await measure(
    "ReentrantLock",
    main,
    () => reentrant.acquire("owner", { leaseMs: LEASE_MS }),
    () => reentrant.release("owner"),
  );
  await measure(
    "ReentrantLock, re-entry",
    main,
    async () => {
      await reentrant.acquire("owner", { leaseMs: LEASE_MS });
      return undefined;
    },
    () => reentrant.release("owner"),
    "counted: the second acquire and the last release",
  );
  const semaphore = new ExpirableSemaphore(redis, unique("rt-semaphore"), 3);
  await measure(
    "ExpirableSemaphore",
    main,
    async () => (await semaphore.tryAcquire({ leaseMs: LEASE_MS })) as Lease,
    (permit) => permit.release(),
  );
  await measure(
    "MultiLock (3 keys)",
    main,
    async () => (await new MultiLock(redis, [unique("a"), unique("b"), unique("c")]).tryAcquire({ leaseMs: LEASE_MS })) as Lease,
    (lease) => lease.release(),
    "one lock after another; the releases share one auto-pipelined request",
  );
  await measure(
    `QuorumLock (${quorumNodes.length} nodes)`,
    stack.quorum.map((node) => node.gateway),
    async () => (await new QuorumLock(quorumNodes, unique("rt-quorum")).tryAcquire({ leaseMs: LEASE_MS })) as Lease,
    (lease) => lease.release(),
    "one request per node, sent at once: one round trip of latency",
  );
  const upstash = new Redis({ url: stack.gateway.url, token: stack.gateway.token, enableTelemetry: false });
  await measure(
    "@upstash/lock",
    main,
    async () => {
      const lock = new UpstashLock({ id: unique("rt-upstash"), redis: upstash, lease: LEASE_MS });
      await lock.acquire();
      return lock;
    },
    (lock) => lock.release(),
  );
  const resp = new IORedis(stack.redis.url);
  try {
    const redlock = new Redlock([resp], { retryCount: 0 });
    const name = unique("rt-redlock");
    const commands = async (action: () => Promise<unknown>) => {
      const before = (await commandStat(resp, "evalsha")).calls + (await commandStat(resp, "eval")).calls;
      await action();
      return (await commandStat(resp, "evalsha")).calls + (await commandStat(resp, "eval")).calls - before;
    };
    await (await redlock.acquire([name], LEASE_MS)).release();
    let held: Awaited<ReturnType<Redlock["acquire"]>> | undefined;
    const acquire = await commands(async () => {
      held = await redlock.acquire([name], LEASE_MS);
    });
    const release = await commands(() => (held as NonNullable<typeof held>).release());
    rows.push({ lock: "@sesamecare-oss/redlock (1 node)", acquire, release, note: "RESP: script calls counted by Redis" });
  } finally {
    resp.disconnect();
  }
  return rows;
}

// 2. Contention -----------------------------------------------------------------------------

/** Takes the lock (or gives up: undefined) and hands back its release. */
type Acquire = () => Promise<(() => Promise<unknown>) | undefined>;

export interface ContentionFigures {
  library: string;
  settings: string;
  acquisitions: number;
  /** Acquisitions a contender gave up on (the library's retries ran out). */
  gaveUp: number;
  perSecond: number;
  waitP50Ms: number;
  waitP99Ms: number;
  waitMaxMs: number;
  /** Share of hand-offs where the contender that just released took the lock straight back. */
  takesBackPct: number;
  /** When the first and the last contender finished its rounds (the spread of fairness). */
  firstDoneS: number;
  lastDoneS: number;
  /** Holders that overlapped (a broken lock); 0 for every library here. */
  overlaps: number;
}

async function contend(
  size: ContentionSize,
  library: string,
  settings: string,
  acquireFor: (contender: number) => Acquire,
): Promise<ContentionFigures> {
  const waits: number[] = [];
  const done: number[] = [];
  let gaveUp = 0;
  let lastHolder: number | undefined;
  let takesBack = 0;
  let handOffs = 0;
  let inside = 0;
  let overlaps = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: size.contenders }, async (_, contender) => {
      const acquire = acquireFor(contender);
      for (let round = 0; round < size.rounds; round++) {
        const askedAt = performance.now();
        const release = await acquire();
        if (!release) {
          gaveUp++;
          continue;
        }
        waits.push(performance.now() - askedAt);
        if (++inside > 1) overlaps++;
        if (lastHolder !== undefined) {
          handOffs++;
          if (lastHolder === contender) takesBack++;
        }
        lastHolder = contender;
        await sleep(WORK_MS);
        inside--;
        await release();
      }
      done.push(performance.now() - started);
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const latency = latencyFigures(waits);
  return {
    library,
    settings,
    acquisitions: waits.length,
    gaveUp,
    perSecond: waits.length / seconds,
    waitP50Ms: latency.p50,
    waitP99Ms: latency.p99,
    waitMaxMs: Math.max(...waits),
    takesBackPct: handOffs === 0 ? 0 : (100 * takesBack) / handOffs,
    firstDoneS: Math.min(...done) / 1000,
    lastDoneS: Math.max(...done) / 1000,
    overlaps,
  };
}

async function contention(stack: Stack, size: ContentionSize, respPort?: number): Promise<ContentionFigures[]> {
  const redis = restClient(stack);
  const upstash = new Redis({ url: stack.gateway.url, token: stack.gateway.token, enableTelemetry: false });
  const figures: ContentionFigures[] = [];
  const ours = (fair: boolean): Acquire => {
    const lock = new Lock(redis, unique(fair ? "fair" : "unfair"));
    return async () => {
      const lease = await lock.tryAcquire({ leaseMs: LEASE_MS, waitMs: 120_000, fair });
      return lease && (() => lease.release());
    };
  };
  const fair = ours(true);
  figures.push(await contend(size, "src/locks Lock", "fair (default), wait up to 120 s", () => fair));
  const unfair = ours(false);
  figures.push(await contend(size, "src/locks Lock", "fair: false, wait up to 120 s", () => unfair));
  const upstashLock = (retry?: { attempts: number; delay: number }): Acquire => {
    const id = unique("upstash");
    return async () => {
      const lock = new UpstashLock({ id, redis: upstash, lease: LEASE_MS, ...(retry && { retry }) });
      return (await lock.acquire()) ? () => lock.release() : undefined;
    };
  };
  const upstashDefault = upstashLock();
  figures.push(await contend(size, "@upstash/lock", "defaults (3 attempts, 100 ms apart)", () => upstashDefault));
  const upstashTuned = upstashLock({ attempts: Number.MAX_SAFE_INTEGER, delay: 10 });
  figures.push(await contend(size, "@upstash/lock", "never gives up, retries every 10 ms", () => upstashTuned));
  const clients = Array.from({ length: size.contenders }, () => new IORedis(respUrl(stack, respPort)));
  try {
    const name = unique("redlock");
    // One client per contender: each is its own process in a real deployment.
    const redlocks = clients.map((client) => new Redlock([client], { retryCount: -1, retryDelay: 10, retryJitter: 10 }));
    for (const redlock of redlocks) redlock.on("error", () => undefined); // per-attempt ResourceLockedErrors
    figures.push(
      await contend(size, "@sesamecare-oss/redlock", "RESP; never gives up, retries every 10-20 ms", (contender) => async () => {
        const lock = await (redlocks[contender] as Redlock).acquire([name], LEASE_MS);
        return () => lock.release();
      }),
    );
  } finally {
    for (const client of clients) client.disconnect();
  }
  return figures;
}

// 3. A paused holder ------------------------------------------------------------------------

export interface PausedHolderRow {
  library: string;
  staleWrite: "refused" | "went through";
  how: string;
}

const PAUSE = { leaseMs: 300, pauseMs: 900 };

/**
 * The first holder takes a 300 ms lease, then is paused for 900 ms (nothing of it runs: no
 * renewal either, as under a GC pause or SIGSTOP); the second holder takes the lock and
 * writes; the first wakes and writes. Each library's own way to write: fenced where it has
 * a fencing token, plain where it has none.
 */
async function pausedHolder(stack: Stack): Promise<PausedHolderRow[]> {
  const db = await stack.worker.mf.getD1Database("DB");
  await db.prepare("CREATE TABLE IF NOT EXISTS bench_paused_holder (resource TEXT PRIMARY KEY, holder TEXT NOT NULL)").run();
  const upsert = (resource: string, holder: string) =>
    db
      .prepare(
        "INSERT INTO bench_paused_holder (resource, holder) VALUES (?1, ?2) ON CONFLICT (resource) DO UPDATE SET holder = ?2",
      )
      .bind(resource, holder);
  const plainWrite = (resource: string, holder: string) => upsert(resource, holder).run();
  const finalHolder = async (resource: string) =>
    db.prepare("SELECT holder FROM bench_paused_holder WHERE resource = ?").bind(resource).first<string>("holder");

  /** `take` returns the holder's write (fenced or plain); false when the library refused it. */
  const scenario = async (
    library: string,
    how: string,
    take: (resource: string, wait: boolean) => Promise<(holder: string) => Promise<unknown>>,
  ) => {
    const resource = unique("paused");
    const first = await take(resource, false);
    await sleep(PAUSE.pauseMs);
    const second = await take(resource, true);
    await second("second");
    const refused = await first("first, late").then(
      () => false,
      (err: unknown) => err instanceof StaleFenceError,
    );
    const through = (await finalHolder(resource)) === "first, late";
    if (refused === through) throw new Error(`${library}: the late write was neither clearly refused nor applied`);
    return { library, staleWrite: refused ? ("refused" as const) : ("went through" as const), how };
  };

  const redis = restClient(stack);
  const rows: PausedHolderRow[] = [];
  rows.push(
    await scenario("src/locks Lock + fencedBatch", "fencing token checked by D1 in the write's batch", async (resource, wait) => {
      const lease = (await new Lock(redis, resource).tryAcquire({ leaseMs: PAUSE.leaseMs, waitMs: wait ? 3_000 : 0 })) as Lease;
      return (holder) => fencedBatch(db, resource, lease, [upsert(resource, holder)]);
    }),
  );
  const quorumNodes = stack.quorum.map((node) => restClient(stack, node.gateway.url));
  rows.push(
    await scenario(
      `src/locks QuorumLock (${quorumNodes.length} nodes)`,
      "no fencing token: a plain write",
      async (resource, wait) => {
        await new QuorumLock(quorumNodes, resource).tryAcquire({
          leaseMs: PAUSE.leaseMs,
          retryCount: wait ? 100 : 0,
          retryDelayMs: 30,
        });
        return (holder) => plainWrite(resource, holder);
      },
    ),
  );
  const upstash = new Redis({ url: stack.gateway.url, token: stack.gateway.token, enableTelemetry: false });
  rows.push(
    await scenario("@upstash/lock", "no fencing token: a plain write", async (resource) => {
      await new UpstashLock({
        id: resource,
        redis: upstash,
        lease: PAUSE.leaseMs,
        retry: { attempts: 100, delay: 30 },
      }).acquire();
      return (holder) => plainWrite(resource, holder);
    }),
  );
  const resp = new IORedis(stack.redis.url);
  try {
    const redlock = new Redlock([resp], { retryCount: 100, retryDelay: 30 });
    redlock.on("error", () => undefined);
    rows.push(
      await scenario("@sesamecare-oss/redlock", "no fencing token: a plain write", async (resource) => {
        await redlock.acquire([resource], PAUSE.leaseMs);
        return (holder) => plainWrite(resource, holder);
      }),
    );
  } finally {
    resp.disconnect();
  }
  return rows;
}

// The section ----------------------------------------------------------------------------------

export interface LockFigures {
  contenders: number;
  rounds: number;
  workMs: number;
  hopMs: number;
  roundTrips: RoundTripRow[];
  bare: ContentionFigures[];
  overHop: ContentionFigures[];
  pausedHolder: { leaseMs: number; pauseMs: number; rows: PausedHolderRow[] };
}

export async function benchLocks(
  stack: Stack,
  hopMs: number,
  progress: (label: string) => void,
  size: ContentionSize = { contenders: CONTENDERS, rounds: ROUNDS },
): Promise<LockFigures> {
  progress("locks: round trips per acquire and release");
  const rows = await roundTrips(stack);
  progress(`locks: ${size.contenders} contenders x ${size.rounds} rounds on one key, bare`);
  const bare = await contention(stack, size);
  progress(`locks: the same over a ${hopMs} ms hop (gateway latency; a delaying TCP proxy for RESP)`);
  await stack.gateway.setLatency(hopMs);
  const hop = await startTcpHop(stack.redis.port, hopMs);
  let overHop: ContentionFigures[];
  try {
    overHop = await contention(stack, size, hop.port);
  } finally {
    await stack.gateway.setLatency(0);
    await hop.close();
  }
  progress("locks: a holder paused past its lease");
  const paused = await pausedHolder(stack);
  return {
    contenders: size.contenders,
    rounds: size.rounds,
    workMs: WORK_MS,
    hopMs,
    roundTrips: rows,
    bare,
    overHop,
    pausedHolder: { ...PAUSE, rows: paused },
  };
}
