// npm run bench -- [<section> ...] [--json] [--only <section,...>] [--users 2000] [--attempts 2] [--stock 300]
//                   [--concurrency 500] [--requests 6000] [--hop-ms 5] [--throughput-concurrency 50,200]
//                   [--strategy-rounds 3] [--entries 1000000] [--smallest]
//
// --smallest runs every section at its smallest form: a check that each runs and reads its
// replies (a test runs it), not figures.
//
// Sections (named, or picked with --only; all by default), numbered as the report prints them:
// 0. counts: what each action costs in what the platforms bill (Worker requests and subrequests,
//    Upstash commands and bytes, Queue messages, D1 rows read and written), counted on a stack
//    of its own (load/cost/actions.ts), and drops of 10,000 to 1,000,000 buyers priced with
//    them (load/cost/drop.ts; `npm run cost` prices one);
// 1. strategies: the lab's strategies side by side on the same crowd: time to sell out,
//    accepted/s, latency, oversold, duplicates, buyers turned away while stock remained, stock
//    unsold, --strategy-rounds rounds alternating (the order reversed every other round), the
//    median with the lowest and highest; then lock, redlock and atomic again with the gateway adding a --hop-ms round trip
//    to every request (a Worker's hop to its Upstash region, which the local gateway does not
//    have); durable-object: the Durable Object peer, one RPC per checkout and merged with the
//    isolate memo, against atomic (durable-object.ts);
// 2. throughput: checkout against a trivial route (GET /healthz), same runtime and harness, at
//    each --throughput-concurrency; cpu and profile: server CPU per request in production's
//    mix (a new token and address per request, per-caller limits on, settlement running, its
//    share split into the request, the consumer's own work and local D1 and Queues; and the
//    Worker's JavaScript alone, requests handed to it inside its isolate), and where the
//    isolate spends it (cpu.ts, profile.ts, on stacks of their own);
// 3. drain: settlement orders/s into D1 after a spike;
// 4. round-trips: Upstash round trips and Redis commands per checkout outcome;
// 5-6. admission: where the admission bucket lives, and a spike with and without it;
// 7. scale (scale.ts); 8. lifecycle: the payment window's cost and expiry to buyable (lifecycle.ts);
// 9. read-path: D1 reads, Upstash round trips and Redis commands per 1,000 page views (a sale's
//    page, the catalog's), cold, warm, going stale and for ids that never existed, each with
//    every cache guard on and with the one it exists for off;
// 10. locks: the lock library against its peers (locks.ts);
// 11. big-keys: a sale's big keys at 1k and 1M buyers: memory, checkout.lua's latency, and
//    removing the buyers hash with DEL, UNLINK or in chunks (big-keys.ts, its own redis-server);
// 12. queue: the waiting room: round trips per 1,000 position polls, checkout with passes
//    against the same sale unqueued, a pass expiring to the next place let in (queue.ts);
// 13. global-limits: a route with the global limits against without them, for admitted and
//    blocked callers: round trips and workerd CPU per request (global-limits.ts, stacks of its own);
// 14. draw: a draw of --entries entries through the jobs queue: one entry's round trips,
//    time, steps, Redis commands and D1 rows per phase, the largest record, verifyDraw (draw.ts,
//    a stack of its own).
//
// One local stack (redis-server, the Upstash gateway, the Worker on Miniflare with local D1
// and Queues, LAB_ENABLED=true, three more redis-server + gateway pairs for the quorum lock)
// serves the sections that need no stack of their own. Local absolute numbers mean little
// (2 shared cores): read the ratios.
import { parseArgs } from "node:util";
import type { Answer } from "../../dev/lib/api-client.ts";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";
import { workerConfig } from "../../dev/stack/wrangler-cache.ts";
import { STRATEGIES as LAB_STRATEGIES, type StrategyName as LabStrategy } from "../../src/shared/lab-strategies.ts";
import { type CountedActions, keepCounts, measureOnOwnStack } from "../cost/counted.ts";
import { actionTable, dropsTable, pushMeasured } from "../cost/report.ts";
import { measureCpu, pinStack, stackProcesses } from "../runner/cpu.ts";
import { drive, planCrowd, type Sample, type Shot } from "../runner/crowd.ts";
import { measureDraw } from "../runner/draw-scale.ts";
import { measureReadPath } from "../runner/read-path.ts";
import { measureRoundTrips } from "../runner/round-trips.ts";
import { type RunResult, runLoad, soldWrong } from "../runner/run.ts";
import { latencyFigures } from "../runner/stats.ts";
import { fixed, formatTable, seconds } from "../runner/table.ts";
import { stackTarget, type Target } from "../runner/target.ts";
import { benchAdmissionPlacement, benchAdmissionSpike } from "./admission.ts";
import { type BigKeyFigures, benchBigKeys, type CheckoutFigures } from "./big-keys.ts";
import { benchCpu, printCpu } from "./cpu.ts";
import { printDraw } from "./draw.ts";
import { benchDurableObject, printDurableObject } from "./durable-object.ts";
import { benchGlobalLimits, printGlobalLimits } from "./global-limits.ts";
import { benchLifecycle, printLifecycle } from "./lifecycle.ts";
import { benchLocks, type ContentionFigures } from "./locks.ts";
import { benchProfile, printProfile } from "./profile.ts";
import { benchScale, printScale } from "./scale.ts";
import { benchQueue, printQueue } from "./waiting-room.ts";

const SECTIONS = [
  "counts",
  "round-trips",
  "admission",
  "strategies",
  "drain",
  "throughput",
  "cpu",
  "profile",
  "durable-object",
  "scale",
  "lifecycle",
  "read-path",
  "locks",
  "big-keys",
  "queue",
  "global-limits",
  "draw",
] as const;
/** Sections that start what they need themselves, before the shared stack. */
const ON_THEIR_OWN: readonly (typeof SECTIONS)[number][] = ["counts", "cpu", "profile", "big-keys", "global-limits", "draw"];

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    users: { type: "string", default: "2000" },
    attempts: { type: "string", default: "2" },
    stock: { type: "string", default: "300" },
    concurrency: { type: "string", default: "500" },
    requests: { type: "string", default: "6000" },
    "throughput-concurrency": { type: "string", default: "50,200" },
    "hop-ms": { type: "string", default: "5" },
    "strategy-rounds": { type: "string", default: "3" },
    entries: { type: "string", default: "1000000" },
    json: { type: "boolean", default: false },
    only: { type: "string" },
    smallest: { type: "boolean", default: false },
  },
});
/** Every section at its smallest: the crowds, rounds and sizes below, whatever else was asked. */
const smallest = values.smallest;
if (smallest) {
  Object.assign(values, {
    users: "60",
    stock: "20",
    concurrency: "50",
    requests: "300",
    "throughput-concurrency": "20",
    "strategy-rounds": "1",
    entries: "1000",
  });
}
const named = [...(values.only?.split(",") ?? []), ...positionals];
const only = named.length > 0 ? named : undefined;
const unknown = only?.filter((s) => !(SECTIONS as readonly string[]).includes(s));
if (unknown?.length) throw new Error(`unknown section ${unknown.join(", ")}; the sections are ${SECTIONS.join(", ")}`);
const want = (section: (typeof SECTIONS)[number]) => !only || only.includes(section);
const users = Number(values.users);
const attempts = Number(values.attempts);
const stock = Number(values.stock);
const concurrency = Number(values.concurrency);
const requests = Number(values.requests);
const throughputConcurrencies = values["throughput-concurrency"].split(",").map(Number);
const hopMs = Number(values["hop-ms"]);
const strategyRounds = Number(values["strategy-rounds"]);
/** The priced drops the report shows: these crowds on this many units. */
const DROP_CROWDS = [10_000, 100_000, 1_000_000];
const DROP_STOCK = 5_000;
const THROUGHPUT_ROUNDS = 3;
const log = (text: string) => {
  if (!values.json) console.log(text);
};
const progress = (label: string) => {
  if (!values.json) process.stderr.write(`${label}...\n`);
};

/** The middle value; the lower middle of an even count. */
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)] as number;

/**
 * 1. The lab: strategies on the same crowd (by default users double-clicking, so duplicates
 * can happen), `strategyRounds` rounds, the order reversed every other round, so none always
 * runs first or after the same one. Each figure is the rounds' median, with the lowest and
 * highest where one run's figure moves; what a strategy sold wrong, the worst round's.
 */
async function benchStrategies(target: Target, strategies: readonly LabStrategy[]) {
  const runs = new Map<LabStrategy, RunResult[]>();
  for (let round = 0; round < strategyRounds; round++) {
    const order = round % 2 === 0 ? [...strategies] : [...strategies].reverse();
    for (const run of await runLoad(target, {
      strategies: order,
      users,
      attempts,
      stock,
      pace: { concurrency },
      drainTimeoutMs: 60_000,
    })) {
      runs.set(run.strategy as LabStrategy, [...(runs.get(run.strategy as LabStrategy) ?? []), run]);
    }
  }
  const spread = (values: number[]) => ({ median: median(values), min: Math.min(...values), max: Math.max(...values) });
  const sellOut = (strategy: LabStrategy) => {
    const times = (runs.get(strategy) ?? []).map((r) => r.stats.sellOutMs);
    // A strategy that did not sell out in some round has no time to sell out.
    return times.every((t): t is number => t !== null) ? spread(times) : null;
  };
  const atomic = sellOut("atomic");
  return strategies.map((strategy) => {
    const mine = runs.get(strategy) ?? [];
    const wrong = mine.map(soldWrong);
    const sellOutMs = sellOut(strategy);
    const acceptedPerSec = spread(mine.map((r) => r.stats.acceptedPerSec));
    return {
      strategy,
      rounds: mine.length,
      sellOutMs: sellOutMs?.median ?? null,
      sellOutSpreadMs: sellOutMs && { min: sellOutMs.min, max: sellOutMs.max },
      acceptedPerSec: acceptedPerSec.median,
      acceptedPerSecSpread: { min: acceptedPerSec.min, max: acceptedPerSec.max },
      p50Ms: median(mine.map((r) => r.stats.latencyMs.p50)),
      p99Ms: median(mine.map((r) => r.stats.latencyMs.p99)),
      accepted: median(mine.map((r) => r.stats.accepted)),
      oversold: Math.max(...wrong.map((w) => w.oversold)),
      duplicates: Math.max(...wrong.map((w) => w.duplicates)),
      turnedAwayWhileInStock: Math.max(...mine.map((r) => r.stats.turnedAwayInStock)),
      unsold: Math.max(...mine.map((r) => ("unsold" in r.report ? r.report.unsold : 0))),
      /** How many times longer than atomic this strategy took to sell out (medians). */
      sellOutVsAtomic: sellOutMs && atomic ? sellOutMs.median / atomic.median : null,
    };
  });
}

type StrategyFigures = Awaited<ReturnType<typeof benchStrategies>>[number];

/** The first crowd pays for cold connections and JIT; no strategy should pay it alone. */
async function warmUp(target: Target) {
  progress(`warm-up: ${users} checkouts on a throwaway lab sale, ${concurrency} in flight`);
  const warmupSale = await target.api.createLabSale(users);
  const warmupShots = await planCrowd(target.api, users, 1, `bench-warmup-${Date.now().toString(36)}-`);
  await drive(warmupShots, (shot) => target.api.labCheckout("atomic", warmupSale, shot.token), { concurrency });
}

/** Closed-loop requests through the same dispatch as every other figure here. */
async function throughput(shots: Shot[], send: (shot: Shot) => Promise<Answer>, expect: string, inFlight: number) {
  const { samples, durationMs } = await drive(shots, send, { concurrency: inFlight });
  const unexpected = samples.filter((s) => s.code !== expect);
  if (unexpected.length > 0) throw new Error(`${unexpected.length} answers were not ${expect}: ${unexpected[0]?.code}`);
  return { samples, durationMs };
}

/**
 * 2. Every checkout accepted (distinct users, ample stock) against GET /healthz. The two
 * alternate in rounds, so a neighbour's load on the shared cores weighs on both alike.
 */
async function benchCheckoutVsTrivial(target: Target, inFlight: number) {
  const perRound = Math.ceil(requests / THROUGHPUT_ROUNDS);
  const warmup = Math.min(1_000, perRound);
  progress(`checkout vs GET /healthz: ${THROUGHPUT_ROUNDS} alternating rounds of ${perRound} requests, ${inFlight} in flight`);
  const total = warmup + perRound * THROUGHPUT_ROUNDS;
  const { id: saleId } = await target.api.createSale({ stock: total, name: "bench throughput" });
  const shots = await planCrowd(target.api, total, 1, `bench-tp-${inFlight}-${Date.now().toString(36)}-`);
  const healthz = () => target.api.healthz();
  const buy = (shot: Shot) => target.api.checkout(saleId, shot.token);
  await throughput(shots.slice(0, warmup), healthz, "OK", inFlight);
  await throughput(shots.slice(0, warmup), buy, "ACCEPTED", inFlight);
  const measured = { healthz: { samples: [] as Sample[], ms: 0 }, checkout: { samples: [] as Sample[], ms: 0 } };
  /** Checkout's throughput over /healthz's, round by round: how far one run's ratio moves. */
  const roundRatios: number[] = [];
  for (let round = 0; round < THROUGHPUT_ROUNDS; round++) {
    const slice = shots.slice(warmup + round * perRound, warmup + (round + 1) * perRound);
    const perSec = { healthz: 0, checkout: 0 };
    for (const [route, send, expect] of [
      ["healthz", healthz, "OK"],
      ["checkout", buy, "ACCEPTED"],
    ] as const) {
      const { samples, durationMs } = await throughput(slice, send, expect, inFlight);
      measured[route].samples.push(...samples);
      measured[route].ms += durationMs;
      perSec[route] = (samples.length * 1000) / durationMs;
    }
    roundRatios.push(perSec.checkout / perSec.healthz);
  }
  const rows = (["healthz", "checkout"] as const).map((route) => {
    const { samples, ms } = measured[route];
    const latency = latencyFigures(samples.map((s) => s.latencyMs));
    return { route, requests: samples.length, reqPerSec: (samples.length * 1000) / ms, p50Ms: latency.p50, p99Ms: latency.p99 };
  });
  const [trivial, checkoutFigures] = rows as [(typeof rows)[number], (typeof rows)[number]];
  return {
    inFlight,
    rows,
    ratio: checkoutFigures.reqPerSec / trivial.reqPerSec,
    ratioSpread: { min: Math.min(...roundRatios), max: Math.max(...roundRatios) },
  };
}

/** 3. A spike of distinct buyers that sells out a sale, then the queue settling it into D1. */
async function benchDrain(stack: Stack, target: Target) {
  const orders = Math.min(2_000, users);
  progress(`settlement drain: ${orders} orders`);
  const { id: saleId } = await target.api.createSale({ stock: orders, name: "bench drain" });
  const count = async () =>
    (await stack.worker.query<{ n: number }>("SELECT COUNT(*) AS n FROM orders WHERE sale_id = ?", Number(saleId)))[0]?.n ?? 0;
  const shots = await planCrowd(target.api, orders, 1, `bench-drain-${Date.now().toString(36)}-`);
  const started = performance.now();
  const { samples } = await drive(shots, (shot) => target.api.checkout(saleId, shot.token), { concurrency });
  const accepted = samples.filter((s) => s.status === 202);
  const firstAcceptedMs = Math.min(...accepted.map((s) => s.startMs + s.latencyMs));
  const lastAcceptedMs = Math.max(...accepted.map((s) => s.startMs + s.latencyMs));
  const deadline = performance.now() + 60_000;
  while ((await count()) < accepted.length) {
    if (performance.now() > deadline) throw new Error("the settlement queue did not drain within 60 s");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const settledMs = performance.now() - started;
  return {
    orders: accepted.length,
    spikeMs: lastAcceptedMs,
    settledMs,
    lagAfterLastAcceptMs: settledMs - lastAcceptedMs,
    ordersPerSec: (accepted.length * 1000) / (settledMs - firstAcceptedMs),
  };
}

/**
 * Every section's conditions: how much of the cores other work took while it ran, or why it
 * failed. A section that fails is reported and the others still run; the bench exits 1.
 */
const conditions: { section: string; othersShare: number; interfered: boolean; failed?: string }[] = [];
const failed = (name: string, err: unknown) => {
  console.error(`section ${name} failed:`, err);
  conditions.push({ section: name, othersShare: 0, interfered: false, failed: String(err).slice(0, 200) });
  process.exitCode = 1;
  return undefined;
};
/** A section that starts what it needs itself (its conditions are its own stacks' business). */
const onItsOwn = async <T>(name: (typeof SECTIONS)[number], label: string | undefined, work: () => Promise<T>) => {
  if (!want(name)) return undefined;
  if (label) progress(label);
  try {
    return await work();
  } catch (err) {
    return failed(name, err);
  }
};

// The counts on a stack of their own (the meter around the Worker, production's limits): kept
// for `npm run cost` too, unless measured at the smallest form. That form's figures are not
// read, so its actions count as finished after half a second of quiet, and push and polling
// run 3 seconds each.
const SMALLEST_COUNTS = { crowd: 100, joins: 10, polls: 60, inFlight: [20, 50], quietMs: 500, pushSec: 3 } as const;
const counted = await onItsOwn("counts", "counts: what each action costs, counted (a stack of its own)", async () => {
  const measured = await measureOnOwnStack(progress, smallest ? SMALLEST_COUNTS : {});
  return smallest ? { ...measured, code: "smallest form", measuredAt: new Date().toISOString() } : keepCounts(measured);
});
const drops = counted && (await dropsTable(counted, DROP_CROWDS, DROP_STOCK));
// The CPU figures need stacks of their own (five, differing in what is done with the orders); they run alone, first.
const cpu = await onItsOwn(
  "cpu",
  "server CPU per request in production's mix: checkout and a refusal vs GET /healthz (own stacks)",
  () => benchCpu(smallest ? { perRound: 30, rounds: 2, javascript: { rounds: 2, perRound: 30 } } : {}),
);
const profile = await onItsOwn(
  "profile",
  "a V8 CPU profile of the Worker: /healthz, checkout and a refusal (a stack of its own)",
  () => benchProfile(smallest ? { requests: 60 } : {}),
);
// On a redis-server of its own: the stack's Redis never holds the million-field keys.
// Split for the record limit wrangler.toml sets (REDIS_MAX_RECORD_BYTES, Upstash's 100 MB).
const bigKeys = await onItsOwn("big-keys", undefined, () =>
  benchBigKeys(progress, Number(workerConfig().vars.REDIS_MAX_RECORD_BYTES), smallest ? [1_000] : undefined),
);
const globalLimits = await onItsOwn(
  "global-limits",
  "global limits: GET /api/orders with and without them (stacks of their own)",
  () => benchGlobalLimits(smallest ? { users: 5, perUser: 4 } : {}),
);
const drawEntries = Number(values.entries);
const draw = await onItsOwn("draw", `draw: ${drawEntries} entries drawn through the jobs queue (a stack of its own)`, () =>
  measureDraw({ entries: drawEntries, progress }),
);
if (!SECTIONS.some((s) => !ON_THEIR_OWN.includes(s) && want(s))) {
  if (values.json) console.log(JSON.stringify({ counts: counted, cpu, profile, bigKeys, globalLimits, draw, conditions }));
  else {
    if (counted && drops) printCounts(counted, drops);
    if (cpu) printCpu(cpu, log);
    if (profile) printProfile(profile, log);
    if (bigKeys) printBigKeys(bigKeys);
    if (globalLimits) printGlobalLimits(globalLimits, log);
    if (draw) printDraw(draw, log);
    printConditions();
  }
  process.exit();
}
// No per-user limit: the round-trip figures send bursts from one buyer (the limit costs no round trip).
const stack = await startStack({ vars: { LAB_ENABLED: "true", USER_RATE_LIMIT: "0" }, quorumNodes: 3 });
try {
  const target = stackTarget(stack);
  const processes = stackProcesses(stack);
  const pinning = pinStack(processes);
  progress(`pinning: ${pinning}`);
  /** Runs a section when --only picks it, and notes how much of the cores other work took meanwhile. */
  const section = async <T>(name: (typeof SECTIONS)[number], label: string | undefined, work: () => Promise<T>) => {
    if (!want(name)) return undefined;
    if (label) progress(label);
    try {
      const { result, cpu } = await measureCpu(processes, work);
      conditions.push({ section: name, othersShare: cpu.othersShare, interfered: cpu.interfered });
      return result;
    } catch (err) {
      return failed(name, err);
    }
  };
  // On the quiet stack first: a crowd's settlement still running would count in its figures.
  const roundTrips = await section("round-trips", "round trips per outcome", () => measureRoundTrips(stack));
  const readPath = await section("read-path", "read path: page views per scenario, guards on and off", () =>
    measureReadPath(stack, smallest ? 100 : undefined),
  );
  const admission = await section("admission", "admission: bucket placement, and a spike with and without it", async () => ({
    placement: await benchAdmissionPlacement(stack, smallest ? 200 : undefined),
    spike: await benchAdmissionSpike(stack, smallest ? 200 : undefined),
  }));
  // Before any crowd, so no settlement or lab traffic shares its cores.
  const locks = await section("locks", undefined, () =>
    benchLocks(stack, hopMs, progress, smallest ? { contenders: 5, rounds: 2 } : undefined),
  );
  if (want("strategies") || want("durable-object") || want("scale")) await warmUp(target);
  const strategies = await section(
    "strategies",
    `strategies: ${users} users x ${attempts} attempts, stock ${stock}, ${concurrency} in flight; lock, redlock and atomic again over a ${hopMs} ms hop`,
    async () => {
      const all = await benchStrategies(target, LAB_STRATEGIES);
      await stack.gateway.setLatency(hopMs);
      try {
        return { all, overHop: await benchStrategies(target, ["lock", "redlock", "atomic"]) };
      } finally {
        await stack.gateway.setLatency(0); // a failed run must not leave the hop in later sections
      }
    },
  );
  const durableObject = await section(
    "durable-object",
    "the Durable Object peer (one RPC each, and merged) vs atomic, alternating",
    () =>
      benchDurableObject(stack, {
        users,
        attempts,
        stock,
        hopMs,
        processes,
        progress,
        ...(smallest && { depths: [20], rounds: 1 }),
      }),
  );
  const drain = await section("drain", undefined, () => benchDrain(stack, target));
  const vsTrivial = await section("throughput", undefined, async () => {
    const rows = [];
    for (const inFlight of throughputConcurrencies) rows.push(await benchCheckoutVsTrivial(target, inFlight));
    return rows;
  });
  const scale = await section("scale", "scale: sell-out time and server CPU vs stock and crowd", () =>
    benchScale(stack, { processes, progress, ...(smallest && { steps: [{ stock: 20, attempts: 100 }] }) }),
  );
  const lifecycle = await section("lifecycle", "lifecycle: payment window vs none, and expiry to buyable", () =>
    benchLifecycle(stack, { processes, ...(smallest && { perRound: 100, rounds: 2, expiries: 1 }) }),
  );
  const queue = await section("queue", "queue: polls, checkout with passes vs without a waiting room, pass expiry", () =>
    benchQueue(stack, { processes, ...(smallest && { perRound: 100, rounds: 2 }) }),
  );

  const speedups = (runs: StrategyFigures[]) => Object.fromEntries(runs.map((s) => [s.strategy, s.sellOutVsAtomic]));
  const summary = {
    counts: counted,
    pinning,
    conditions,
    crowd: { users, attemptsPerUser: attempts, stock, concurrency },
    strategies: strategies?.all,
    /** How many times faster atomic sold out than each other strategy. */
    sellOutSpeedup: strategies && speedups(strategies.all),
    overHop: strategies && { hopMs, strategies: strategies.overHop, sellOutSpeedup: speedups(strategies.overHop) },
    checkoutVsTrivial: vsTrivial,
    drain,
    roundTrips,
    admission,
    cpu,
    profile,
    durableObject,
    scale,
    lifecycle,
    queue,
    readPath,
    locks,
    bigKeys,
    globalLimits,
    draw,
  };
  if (values.json) {
    console.log(JSON.stringify(summary));
  } else {
    if (counted && drops) printCounts(counted, drops);
    log(`\nPinning: ${pinning}`);
    const times = (n: number | null | undefined) => (n == null ? "n/a (one did not sell out)" : `${fixed(n)}x`);
    const crowd =
      attempts > 1 ? `${users} users x ${attempts} attempts back to back (a double click)` : `${users} distinct users`;
    const range = (r: { min: number; max: number } | null, show: (n: number) => string) =>
      r && strategyRounds > 1 ? ` (${show(r.min)}-${show(r.max)})` : "";
    const strategyTable = (runs: StrategyFigures[]) =>
      formatTable(
        runs.map((s) => ({
          strategy: s.strategy,
          "sell-out s": `${seconds(s.sellOutMs)}${range(s.sellOutSpreadMs, (ms) => seconds(ms))}`,
          "vs atomic": s.sellOutVsAtomic === null ? "-" : `${fixed(s.sellOutVsAtomic)}x`,
          "accepted/s": `${fixed(s.acceptedPerSec)}${range(s.acceptedPerSecSpread, (n) => fixed(n))}`,
          "p50 ms": fixed(s.p50Ms),
          "p99 ms": fixed(s.p99Ms),
          accepted: s.accepted,
          oversold: s.oversold,
          duplicates: s.duplicates,
          "turned away in stock": s.turnedAwayWhileInStock,
          "unsold at end": s.unsold,
        })),
      );
    if (strategies && summary.sellOutSpeedup && summary.overHop) {
      log(
        `\n1. Strategies: ${crowd}, stock ${stock}, ${concurrency} requests in flight; ${strategyRounds} alternating rounds, the median (lowest-highest); sold wrong: the worst round`,
      );
      log(strategyTable(strategies.all));
      log(
        `atomic sells out ${times(summary.sellOutSpeedup.lock)} faster than lock, ${times(summary.sellOutSpeedup.redlock)} faster than redlock, ${times(summary.sellOutSpeedup.naive)} faster than naive, ${times(summary.sellOutSpeedup.optimistic)} faster than optimistic, ${times(summary.sellOutSpeedup["durable-object"])} faster than durable-object, ${times(summary.sellOutSpeedup["durable-object-merged"])} faster than durable-object-merged, ${times(summary.sellOutSpeedup["design-card"])} faster than design-card`,
      );
      log(`\n1b. The same crowd with a ${hopMs} ms round trip added to every Upstash request (the hop to an Upstash region)`);
      log(strategyTable(strategies.overHop));
      log(
        `atomic sells out ${times(summary.overHop.sellOutSpeedup.lock)} faster than lock, ${times(summary.overHop.sellOutSpeedup.redlock)} faster than redlock`,
      );
    }
    if (durableObject) printDurableObject(durableObject, log);

    if (vsTrivial) {
      log(`\n2. Checkout vs a trivial route, same Miniflare runtime and harness, ${THROUGHPUT_ROUNDS} alternating rounds`);
      log(
        formatTable(
          vsTrivial.flatMap((v) =>
            v.rows.map((r) => ({
              "in flight": v.inFlight,
              route: r.route,
              requests: r.requests,
              "req/s": fixed(r.reqPerSec, 0),
              "p50 ms": fixed(r.p50Ms),
              "p99 ms": fixed(r.p99Ms),
            })),
          ),
        ),
      );
      for (const v of vsTrivial) {
        log(
          `${v.inFlight} in flight: checkout throughput = ${fixed(v.ratio, 2)}x the trivial route's (${fixed(v.ratioSpread.min, 2)}-${fixed(v.ratioSpread.max, 2)}x round by round; every checkout accepted: token, script, queue send)`,
        );
      }
    }
    if (cpu) printCpu(cpu, log);
    if (profile) printProfile(profile, log);

    if (drain) {
      log(`\n3. Settlement drain: ${drain.orders} accepted orders into D1`);
      log(
        formatTable([
          {
            orders: drain.orders,
            "spike s": seconds(drain.spikeMs),
            "all in D1 s": seconds(drain.settledMs),
            "lag after last 202 s": seconds(drain.lagAfterLastAcceptMs),
            "orders/s into D1": fixed(drain.ordersPerSec, 0),
          },
        ]),
      );
    }

    if (roundTrips) {
      log("\n4. Upstash round trips and Redis commands per checkout outcome");
      log(
        formatTable(
          roundTrips.map((r) => ({
            outcome: r.outcome,
            "round trips": Number.isInteger(r.roundTrips) ? r.roundTrips : fixed(r.roundTrips, 3),
            "redis commands": Number.isInteger(r.redisCommands) ? r.redisCommands : fixed(r.redisCommands, 1),
            note: r.note ?? "",
          })),
        ),
      );
    }

    if (admission) {
      log("\n5. Where the sale's admission bucket lives: 2000 attempts, 50 in flight, auto-pipelining off");
      log(
        formatTable(
          admission.placement.map((p) => ({
            placement: p.placement,
            "round trips per attempt": fixed(p.roundTripsPerAttempt, 2),
            "attempts/s": p.attemptsPerSecond,
          })),
        ),
      );
      log("\n6. The same spike with and without admission: 2000 users arriving at 1000/s, stock 300");
      log(
        formatTable(
          admission.spike.map((f) => ({
            admission: f.admission,
            requests: f.requests,
            accepted: f.accepted,
            "429": f.rateLimited,
            "round trips": f.roundTrips,
            s: fixed(f.seconds),
          })),
        ),
      );
    }
    if (scale) printScale(scale, log);
    if (lifecycle) printLifecycle(lifecycle, log);
    if (queue) printQueue(queue, log);
    if (readPath) {
      log("\n9. Read path: per 1,000 page views, each in an isolate of its own (no isolate memory helps)");
      log(
        formatTable(
          readPath.map((r) => ({
            page: r.page,
            scenario: r.scenario,
            guards: r.off ? `${r.off} off` : "all on",
            "D1 reads": Math.round((r.d1Reads * 1_000) / r.views),
            "round trips": Math.round((r.roundTrips * 1_000) / r.views),
            "redis commands": Math.round((r.redisCommands * 1_000) / r.views),
          })),
        ),
      );
    }

    if (locks) printLocks(locks);
    if (bigKeys) printBigKeys(bigKeys);
    if (globalLimits) printGlobalLimits(globalLimits, log);
    if (draw) printDraw(draw, log);

    printConditions();
  }
} finally {
  await stack.stop();
}

/** How each section ran: the share of the cores other work took, or why it failed. */
function printConditions() {
  log("\nMeasurement conditions: the share of both cores other work took during each section");
  log(
    formatTable(
      conditions.map((c) => ({
        section: c.section,
        "others' share": c.failed ? "-" : `${fixed(c.othersShare * 100, 0)}%`,
        verdict: c.failed
          ? `FAILED: ${c.failed}`
          : c.interfered
            ? "INTERFERED: other work took the cores; rerun for trustworthy ratios"
            : "ok",
      })),
    ),
  );
}

/** 0. What each action costs, and drops priced with it. */
function printCounts(counted: CountedActions, drops: string) {
  log(`\n0. What each action costs, counted on a stack of its own (${counted.code}, ${counted.measuredAt})`);
  log(actionTable(counted));
  log(`\n0b. Drops priced with those counts (npm run cost prices one)`);
  log(drops);
  if (counted.push) {
    log("\n0c. Waiting by push against polling: the lab's stream (GET /lab/sales/:saleId/queue/stream) and the poll");
    log(pushMeasured(counted.push));
  }
}

/** 10. The lock library against its peers. */
function printLocks(locks: NonNullable<Awaited<ReturnType<typeof benchLocks>>>) {
  log("\n10. Locks: round trips per acquire and release, counted at the gateways (uncontended unless said)");
  log(formatTable(locks.roundTrips.map((r) => ({ lock: r.lock, acquire: r.acquire, release: r.release, note: r.note }))));
  const contentionTable = (rows: ContentionFigures[]) =>
    formatTable(
      rows.map((r) => ({
        library: r.library,
        settings: r.settings,
        "acquired/s": fixed(r.perSecond, 0),
        "gave up": r.gaveUp,
        "p50 wait ms": fixed(r.waitP50Ms, 0),
        "p99 wait ms": fixed(r.waitP99Ms, 0),
        "max wait ms": fixed(r.waitMaxMs, 0),
        "releaser takes it back": `${fixed(r.takesBackPct, 1)}%`,
        "all done s (first-last)": `${fixed(r.firstDoneS, 1)}-${fixed(r.lastDoneS, 1)}`,
        overlaps: r.overlaps,
      })),
    );
  const job = `${locks.contenders} contenders on one key, each ${locks.rounds} times: acquire, ${locks.workMs} ms of work, release`;
  log(`\n10b. ${job}; bare`);
  log(contentionTable(locks.bare));
  log(`\n10c. The same over a ${locks.hopMs} ms hop (gateway latency for REST and pub/sub; a delaying TCP proxy for RESP)`);
  log(contentionTable(locks.overHop));
  const { leaseMs, pauseMs, rows } = locks.pausedHolder;
  log(
    `\n10d. A holder paused past its lease (${leaseMs} ms lease, ${pauseMs} ms pause), then a second holder writes, then the first`,
  );
  log(formatTable(rows.map((r) => ({ library: r.library, "the first holder's late write": r.staleWrite, how: r.how }))));
}

/** 11. A sale's big keys at each size. */
function printBigKeys({ recordLimitBytes: limit, memory, checkout, removal }: BigKeyFigures) {
  const count = (n: number) => n.toLocaleString("en-US");
  const mib = (bytes: number) => `${fixed(bytes / 2 ** 20, 2)} MiB`;
  const share = (bytes: number) => `${fixed((bytes / limit) * 100, 1)}%`;
  log("\n11. Big keys: one sale's keys by its number of buyers (redis-server 7.0 on its own, over RESP)");
  log(
    `\n11a. Memory (MEMORY USAGE, every field counted), each structure whole (all its buckets together); the keys filled with pipelined HSET/ZADD`,
  );
  log(
    formatTable(
      memory.map((m) => ({
        buyers: count(m.buyers),
        buckets: count(m.buckets),
        "buyers hashes": mib(m.buyersBytes),
        "bytes per buyer": fixed(m.buyersBytes / m.buyers, 0),
        "checkout keys hashes": mib(m.checkoutKeysBytes),
        "outbox + pending, a backlog of as many orders": mib(m.backlogBytes),
        "filled in s": seconds(m.fillMs),
      })),
    ),
  );
  // Upstash refuses writes to a record past this (wrangler.toml's REDIS_MAX_RECORD_BYTES).
  log(
    `\n11a'. The largest record beside Upstash's record limit (REDIS_MAX_RECORD_BYTES = ${count(limit)} bytes): one key per structure (unsplit), and split into the sale's buckets`,
  );
  log(
    formatTable(
      memory.map((m) => ({
        buyers: count(m.buyers),
        "unsplit: largest record": `${m.largestWhole.key}, ${mib(m.largestWhole.bytes)}`,
        "unsplit share": share(m.largestWhole.bytes),
        buckets: count(m.buckets),
        "split: largest record": `${m.largest.key}, ${mib(m.largest.bytes)}`,
        "split share": share(m.largest.bytes),
        verdict:
          m.largest.bytes > limit
            ? "over: Upstash refuses its writes"
            : m.largest.bytes > limit / 2
              ? "over half: warned"
              : "inside half the limit",
      })),
    ),
  );
  log("\n11b. lua/checkout.lua against that sale: each call reserves new buyers (client: loopback RESP; Redis: SLOWLOG)");
  log(
    formatTable(
      checkout.flatMap((c) =>
        [
          ["1 buyer", c.single],
          ["100 buyers (a merged call)", c.merged],
        ].map(([per, f]) => {
          const figures = f as CheckoutFigures["single"];
          return {
            buyers: count(c.buyers),
            "per call": per as string,
            "client p50 ms": fixed(figures.client.p50, 3),
            "client p99 ms": fixed(figures.client.p99, 3),
            "Redis p50 µs": fixed(figures.redisUs.p50, 0),
            "Redis p99 µs": fixed(figures.redisUs.p99, 0),
            "Redis max µs": fixed(figures.redisUs.max, 0),
          };
        }),
      ),
    ),
  );
  log(
    "\n11c. Removing one bucket's buyers hash, median of 3 rounds: a command's time is time Redis serves nobody else (SLOWLOG)",
  );
  log(
    formatTable(
      removal.map((r) => ({
        buyers: count(r.buyers),
        "fields removed": count(r.fields),
        how: r.how,
        commands: count(r.commands),
        "total ms": fixed(r.totalMs, 1),
        "Redis busy ms": fixed(r.redisTotalMs, 1),
        "p50 command ms": fixed(r.p50CommandMs, 3),
        "p99 command ms": fixed(r.p99CommandMs, 3),
        "longest command ms": fixed(r.longestCommandMs, 3),
        "longest PING wait ms": fixed(r.longestPingMs, 1),
      })),
    ),
  );
}
