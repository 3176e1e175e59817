// A draw at scale (docs/draws.md): a draw sale on a stack of its own, N entries written into
// Redis as lua/draw-enter.lua writes them (entering through the API a million times is not
// what is measured here; one real entry is, for its round trips), then the draw run through
// the real jobs queue until drawn, and checked from its public routes with verifyDraw.
// test/node/draw-scale.test.ts asserts its figures in small; `npm run bench -- draw` prints
// them (load/bench/draw.ts).
//
// D1's figures are D1's own: every D1 result carries meta.rows_read and meta.rows_written,
// and the Worker runs wrapped (StackOptions.wrapper) with a DB binding that adds them up, per
// phase of the run, for every statement the jobs and the API send. first() is sent as all()
// (D1 runs the whole statement for first() too and takes the first row; all() shows the meta
// first() drops), so nothing escapes the count. The phase a statement counts under is the one
// its step read the run in: every step starts by reading the run's row (draw_runs), and the
// wrapper notes the phase that row names.
import { randomBytes } from "node:crypto";
import { availableParallelism } from "node:os";
import { Redis as IORedis } from "ioredis";
import { startBeacon } from "../../dev/beacon/stand-in.ts";
import { totalCommands } from "../../dev/lib/redis-stats.ts";
import { saleBuckets } from "../../dev/lib/sale-buckets.ts";
import { verifyDraw } from "../../dev/lib/verify-draw.ts";
import { eventually } from "../../dev/lib/wait.ts";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";
import { workerConfig } from "../../dev/stack/wrangler-cache.ts";
import { type BucketSplit, bucketKeyOf, bucketOf, saleKeys } from "../../src/shared/keys.ts";
import { DRAW_CHUNK_LEAVES } from "../../src/shared/limits.ts";
import { type CpuReading, stackProcesses, startCpuReading } from "./cpu.ts";
import { seconds } from "./table.ts";

/** The phases a run goes through, in order. */
export const DRAW_PHASES = ["collect", "tree", "beacon", "shuffle", "select"] as const;
type RunPhase = (typeof DRAW_PHASES)[number];

/** The sale drawn: two sizes, entries of one or two units. */
const SIZES = [
  { id: "s", label: "S", stock: 100 },
  { id: "m", label: "M", stock: 100 },
];
const variantOf = (i: number) => (i % 3 === 0 ? "m" : "s");
const quantityOf = (i: number) => 1 + (i % 2);

/** Entries written to Redis per pipeline. */
const LOAD_BATCH = 10_000;
/**
 * Entries through the API: one to warm the isolate and Redis' script caches, then one measured
 * with the global limits on as wrangler.toml sets them, and one with them off.
 */
export const API_ENTRIES = 3;
/** A request with this header runs with the global limits of draw entries off (the wrapper's env). */
const LIMITS_OFF = "X-Probe-Global-Limits";

/**
 * The Worker as it is, its D1 binding counted. Statements of the jobs queue's batches are
 * counted under the phase of the run their step read (steps: the run rows read), the rest
 * under "api"; GET /__probe/d1 answers the counts, POST /__probe/d1/reset starts them again,
 * GET /__probe/phase/<saleId> the run's phase and when it last moved, GET /__probe/split/<saleId>
 * the sale's bucket count and key (both read uncounted). A request sent with
 * ${LIMITS_OFF}: off runs with the global limits of draw entries off.
 */
const D1_COUNTER = `
import worker from "./index.js";
export * from "./index.js";
let counts = {};
let jobs = {};
const countOf = (bucket, at) => (counts[bucket] ??= { queries: 0, rowsRead: 0, rowsWritten: 0, ms: 0, steps: 0, firstAt: at, lastAt: at });
// Batches of the jobs queue being handled now, and when the last one ended.
let handling = 0;
let handledAt = Date.now();
const REAL = Symbol("statement");
// A D1 binding that adds up D1's own meta of every result; "where" says what a result counts under.
function counted(db, where) {
  const track = (result) => {
    const at = Date.now();
    const row = result.results?.[0];
    // A run's row (draw_runs): its step works in the phase it names.
    const runRead = where.job && row && typeof row.phase === "string" && "chunks" in row && "selection" in row;
    if (runRead) where.bucket = row.phase;
    const c = countOf(where.bucket, at);
    if (runRead) c.steps++;
    c.queries++;
    c.rowsRead += result.meta?.rows_read ?? 0;
    c.rowsWritten += result.meta?.rows_written ?? 0;
    c.ms += result.meta?.duration ?? 0;
    c.lastAt = at;
    return result;
  };
  const wrap = (statement) => ({
    [REAL]: statement,
    bind: (...values) => wrap(statement.bind(...values)),
    all: async () => track(await statement.all()),
    run: async () => track(await statement.run()),
    async first(column) {
      const row = track(await statement.all()).results[0];
      return row === undefined ? null : column === undefined ? row : row[column];
    },
    raw() {
      throw new Error("D1 counter: raw() shows no meta; the Worker does not use it");
    },
  });
  return {
    prepare: (query) => wrap(db.prepare(query)),
    async batch(statements) {
      const results = await db.batch(statements.map((s) => s[REAL]));
      for (const result of results) track(result);
      return results;
    },
    exec() {
      throw new Error("D1 counter: exec() shows no meta; the Worker does not use it");
    },
  };
}
// Per env object, as the Worker's own memos are: one for the API, one with the entries' global limits off.
const envs = new WeakMap();
const countedEnv = (env, where) => ({ ...env, DB: counted(env.DB, where) });
function apiEnv(env, limitsOff) {
  let own = envs.get(env);
  if (!own) {
    const api = countedEnv(env, { bucket: "api", job: false });
    own = { on: api, off: { ...api, DRAW_ENTRIES_PER_USER_PER_MIN: "0", DRAW_ENTRIES_PER_IP_PER_MIN: "0" } };
    envs.set(env, own);
  }
  return limitsOff ? own.off : own.on;
}
export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === "/__probe/d1") return Response.json({ counts, jobs, handling, idleMs: Date.now() - handledAt });
    if (url.pathname.startsWith("/__probe/split/")) {
      const saleId = Number(url.pathname.slice("/__probe/split/".length));
      const sale = await env.DB.prepare("SELECT redis_buckets AS count, bucket_key AS key FROM sales WHERE id = ?").bind(saleId).first();
      return Response.json(sale ?? {});
    }
    if (url.pathname.startsWith("/__probe/phase/")) {
      const saleId = Number(url.pathname.slice("/__probe/phase/".length));
      const run = await env.DB.prepare("SELECT phase, updated_at FROM draw_runs WHERE sale_id = ?").bind(saleId).first();
      return Response.json(run ?? {});
    }
    if (url.pathname === "/__probe/d1/reset") {
      counts = {};
      jobs = {};
      return new Response("reset");
    }
    return worker.fetch(request, apiEnv(env, request.headers.get("${LIMITS_OFF}") === "off"), ctx);
  },
  scheduled: (controller, env, ctx) => worker.scheduled(controller, env, ctx),
  async queue(batch, env, ctx) {
    if (batch.queue !== "flash-sale-jobs") return worker.queue(batch, env, ctx);
    for (const message of batch.messages) {
      const kind = message.body?.kind ?? "unknown";
      jobs[kind] = (jobs[kind] ?? 0) + 1;
    }
    const kinds = [...new Set(batch.messages.map((m) => m.body?.kind))].join("+");
    const where = { bucket: kinds === "draw-step" ? "draw-step" : kinds, job: kinds === "draw-step" };
    handling++;
    try {
      return await worker.queue(batch, countedEnv(env, where), ctx);
    } finally {
      handling--;
      handledAt = Date.now();
    }
  },
};
`;

interface D1Count {
  queries: number;
  rowsRead: number;
  rowsWritten: number;
  /** D1's own time running the statements (meta.duration). */
  ms: number;
  /** Steps: the run's row read at a step's start (phases only). */
  steps: number;
  firstAt: number;
  lastAt: number;
}

interface D1Probe {
  counts: Record<string, D1Count>;
  /** Messages the jobs queue delivered, by kind. */
  jobs: Record<string, number>;
  /** Batches of the jobs queue being handled now, and how long since the last one ended. */
  handling: number;
  idleMs: number;
}

/** Two runtimes' counts as one (the local runtime restarted after a stall starts its counts again). */
function addUp(a: D1Probe, b: D1Probe): D1Probe {
  const counts = { ...a.counts };
  for (const [bucket, c] of Object.entries(b.counts)) {
    const was = counts[bucket];
    counts[bucket] = was
      ? {
          queries: was.queries + c.queries,
          rowsRead: was.rowsRead + c.rowsRead,
          rowsWritten: was.rowsWritten + c.rowsWritten,
          ms: was.ms + c.ms,
          steps: was.steps + c.steps,
          firstAt: Math.min(was.firstAt, c.firstAt),
          lastAt: Math.max(was.lastAt, c.lastAt),
        }
      : c;
  }
  const jobs = { ...a.jobs };
  for (const [kind, n] of Object.entries(b.jobs)) jobs[kind] = (jobs[kind] ?? 0) + n;
  return { counts, jobs, handling: b.handling, idleMs: b.idleMs };
}

/**
 * How long the run may stand still, no batch being handled, before the local jobs queue counts
 * as stalled. Miniflare's local queue can stop delivering for good after a batch (see
 * local-stack.ts; a step sent again is not delivered either): then the runtime is restarted
 * (D1 kept) and the draw sent a step again. Production's Queues have no such stall.
 */
const LOCAL_QUEUE_STALL_MS = 8_000;

/** A stall of the local jobs queue: the phase it fell in and the time it cost. */
export interface Stall {
  phase: string;
  /** From the last batch handled to the runtime restarted and the step sent again. */
  lostMs: number;
}

export interface EntryCost {
  status: number;
  roundTrips: number;
  gatewayCommands: number;
  redisCommands: number;
}

export interface PhaseFigures {
  phase: RunPhase;
  ms: number;
  steps: number;
  d1Queries: number;
  d1RowsRead: number;
  d1RowsWritten: number;
  /** D1's own time running them (meta.duration). */
  d1Ms: number;
  /** workerd's CPU (the Worker, local D1 and Queues) while the run was seen in this phase. */
  workerdMs: number;
}

export interface DrawFigures {
  entries: number;
  buckets: number;
  /** Writing the entries into Redis (not part of the draw). */
  load: { ms: number; commands: number };
  /** One entry through the API, the isolate warm, with the global limits on and off: counted at the gateway and by Redis. */
  entry: Record<"limitsOn" | "limitsOff", EntryCost>;
  largestRecord: { key: string; bytes: number };
  recordLimitBytes: number;
  phases: PhaseFigures[];
  /** From POST /admin/sales/:id/draw to the run drawn. */
  totalMs: number;
  /** draw-step messages the jobs queue delivered. */
  jobs: number;
  /** CPU the stack's processes took during the run, and the share of the cores other work took. */
  cpu: { workerdMs: number; gatewayMs: number; redisMs: number; othersShare: number };
  /** Stalls of the local jobs queue the runtime was restarted for (their time is in totalMs). */
  stalls: Stall[];
  steps: number;
  redisCommands: number;
  gatewayRequests: number;
  gatewayCommands: number;
  d1: { queries: number; rowsRead: number; rowsWritten: number };
  verify: { entries: number; ok: boolean; problems: string[]; winners: number; ms: number; d1RowsRead: number };
  /** The bench's own Node heap at its largest (sampled). */
  heapPeakBytes: number;
}

/** The record as lua/draw-enter.lua writes it: "<variant>|<quantity>|<entered at ms>|<receipt hex>|<state>". */
const entryRecord = (i: number, enteredAt: number) =>
  `${variantOf(i)}|${quantityOf(i)}|${enteredAt}|${randomBytes(16).toString("hex")}|e`;

/**
 * Writes `count` standing entries into the sale's buckets as lua/draw-enter.lua leaves them
 * (each user in bucketOf's bucket, state "e", a fresh receipt, the draw hash's counters),
 * pipelined straight to redis-server, LOAD_BATCH at a time (the bench's memory stays bounded).
 */
async function loadEntries(
  redis: IORedis,
  saleId: string,
  buckets: string[],
  split: BucketSplit,
  count: number,
  tag: string,
): Promise<void> {
  const [sec, micros] = await redis.time();
  const enteredAt = Number(sec) * 1000 + Math.floor(Number(micros) / 1000);
  const counters = new Map<string, number>();
  const add = (field: string, n: number) => counters.set(field, (counters.get(field) ?? 0) + n);
  for (let from = 0; from < count; from += LOAD_BATCH) {
    const byBucket = new Map<number, string[]>();
    for (let i = from; i < Math.min(count, from + LOAD_BATCH); i++) {
      const userId = `${tag}-${i}`;
      const bucket = bucketOf(userId, split);
      const fields = byBucket.get(bucket) ?? [];
      byBucket.set(bucket, fields);
      fields.push(userId, entryRecord(i, enteredAt));
      add("standing", 1);
      add(`e:${variantOf(i)}`, 1);
      add(`u:${variantOf(i)}`, quantityOf(i));
    }
    const pipeline = redis.pipeline();
    for (const [bucket, fields] of byBucket) pipeline.hset(buckets[bucket] as string, ...fields);
    await pipeline.exec();
  }
  const draw = saleKeys(saleId).draw;
  const pipeline = redis.pipeline();
  for (const [field, n] of counters) pipeline.hincrby(draw, field, n);
  await pipeline.exec();
}

/** The largest of the sale's draw records (every field counted). */
async function largestRecord(redis: IORedis, keys: string[]): Promise<{ key: string; bytes: number }> {
  let largest = { key: "", bytes: 0 };
  for (const key of keys) {
    const bytes = Number(await redis.memory("USAGE", key, "SAMPLES", 0));
    if (bytes > largest.bytes) largest = { key, bytes };
  }
  return largest;
}

/** The sale's bucket split as D1 keeps it (the key never leaves the Worker otherwise). */
async function saleSplit(stack: Stack, saleId: string): Promise<BucketSplit> {
  const { count, key } = (await (await stack.worker.fetch(`/__probe/split/${saleId}`)).json()) as {
    count: number;
    key: string | null;
  };
  return { count, key: key === null ? null : bucketKeyOf(key) };
}

const probe = async (stack: Stack, path = "/__probe/d1"): Promise<D1Probe> =>
  (await stack.worker.fetch(path)).json() as Promise<D1Probe>;

/** The API as verifyDraw reads it (the Worker's origin), the beacon through the network. */
const WORKER_ORIGIN = "http://flash.local";
const publicFetch =
  (stack: Stack): typeof fetch =>
  (input, init) => {
    const url = String(input instanceof Request ? input.url : input);
    return url.startsWith(WORKER_ORIGIN) ? stack.worker.fetch(url.slice(WORKER_ORIGIN.length), init) : fetch(input, init);
  };

/** The draw of `entries` entries, on a stack of its own. */
export async function measureDraw({
  entries = 1_000_000,
  progress = (_: string) => {},
}: {
  entries?: number;
  progress?: (label: string) => void;
} = {}): Promise<DrawFigures> {
  let heapPeakBytes = 0;
  const sampleHeap = () => {
    heapPeakBytes = Math.max(heapPeakBytes, process.memoryUsage().heapUsed);
  };
  const heapSampler = setInterval(sampleHeap, 250);
  const beacon = await startBeacon();
  // The global limits of draw entries as wrangler.toml sets them (the local stack turns the per-address one off).
  const deployed = workerConfig().vars;
  const stack = await startStack({
    wrapper: D1_COUNTER,
    vars: { USER_RATE_LIMIT: "0", DRAW_ENTRIES_PER_IP_PER_MIN: deployed.DRAW_ENTRIES_PER_IP_PER_MIN as string },
  });
  const redis = new IORedis(stack.redis.url);
  try {
    const { api } = stack;
    const tag = `draw-${Date.now().toString(36)}`;
    // Entries close once the API's entries are in; the sale starts a day later, so no offer
    // runs beside the draw (its Redis commands and D1 rows would count as the draw's).
    const closesAt = Date.now() + 8_000;
    const sale = await api.createSale({
      name: `draw bench ${entries}`,
      variants: SIZES,
      perUserLimit: 2,
      startsAt: new Date(closesAt + 86_400_000).toISOString(),
      endsAt: new Date(closesAt + 2 * 86_400_000).toISOString(),
      paymentWindowSec: 600,
      draw: {
        opensAt: new Date(Date.now() - 1_000).toISOString(),
        closesAt: new Date(closesAt).toISOString(),
        beacon: { url: beacon.url, round: beacon.roundAt(closesAt) },
      },
    });
    const buckets = (await saleBuckets(redis, sale.id)).map((b) => b.entries);

    progress(`draw: ${API_ENTRIES} entries through the API, the last two counted at the gateway`);
    const entryThroughApi = async (i: number, limitsOff = false): Promise<EntryCost> => {
      const token = await api.userToken(`${tag}-api-${i}`);
      await stack.gateway.resetStats();
      const commandsBefore = await totalCommands(redis);
      const answer = await api.enterDraw(
        sale.id,
        token,
        { variant: variantOf(i), quantity: quantityOf(i) },
        limitsOff ? { [LIMITS_OFF]: "off" } : {},
      );
      const gatewayEntry = await stack.gateway.stats();
      const redisCommands = (await totalCommands(redis)) - commandsBefore;
      if (answer.status !== 201) throw new Error(`entry ${i} was answered ${answer.status} ${answer.code}`);
      return { status: answer.status, roundTrips: gatewayEntry.requests, gatewayCommands: gatewayEntry.commands, redisCommands };
    };
    await entryThroughApi(0);
    const entry = { limitsOn: await entryThroughApi(1), limitsOff: await entryThroughApi(2, true) };

    const loaded = entries - API_ENTRIES;
    progress(`draw: ${loaded} entries into ${buckets.length} buckets, pipelined ${LOAD_BATCH} at a time`);
    const loadStart = performance.now();
    const loadCommandsBefore = await totalCommands(redis);
    await loadEntries(redis, sale.id, buckets, await saleSplit(stack, sale.id), loaded, tag);
    const load = { ms: performance.now() - loadStart, commands: (await totalCommands(redis)) - loadCommandsBefore };
    const standing = Number(await redis.hget(saleKeys(sale.id).draw, "standing"));
    if (standing !== entries) throw new Error(`the draw hash counts ${standing} entries, not ${entries}`);
    const largest = await largestRecord(redis, [...buckets, saleKeys(sale.id).draw]);

    await eventually("the entries to close", async () => Date.now() > closesAt + 200, 60_000);
    progress(`draw: the run through the jobs queue (${entries} entries)`);
    await stack.gateway.resetStats();
    await stack.worker.fetch("/__probe/d1/reset", { method: "POST" });
    const redisBefore = await totalCommands(redis);
    // CPU read in segments: one per phase seen, and a new one after each restart (new processes).
    const cpuSegments: { phase: string; cpu: CpuReading }[] = [];
    let endCpu = startCpuReading(stackProcesses(stack));
    const closeCpu = (phase: string) => cpuSegments.push({ phase, cpu: endCpu() });
    const openCpu = () => {
      endCpu = startCpuReading(stackProcesses(stack));
    };
    const started = performance.now();
    const ran = await api.runDraw(sale.id);
    if (ran.status !== 202) throw new Error(`POST /admin/sales/${sale.id}/draw answered ${ran.status} ${ran.code}`);
    let lastPhase = "";
    let movedAt = Date.now();
    let lastUpdate = 0;
    const stalls: Stall[] = [];
    let carried: D1Probe = { counts: {}, jobs: {}, handling: 0, idleMs: 0 };
    await eventually(
      () => `the draw (last seen in ${lastPhase})`,
      async () => {
        await new Promise((r) => setTimeout(r, 250));
        const run = (await (await stack.worker.fetch(`/__probe/phase/${sale.id}`)).json()) as {
          phase?: string;
          updated_at?: number;
        };
        if (run.phase && run.phase !== lastPhase) {
          progress(`draw: ${run.phase} (${seconds(performance.now() - started)} s)`);
          closeCpu(lastPhase);
          openCpu();
          lastPhase = run.phase;
        }
        if (run.phase === "drawn") return true;
        if ((run.updated_at ?? 0) > lastUpdate) {
          lastUpdate = run.updated_at ?? 0;
          movedAt = Date.now();
          return false;
        }
        if (Date.now() - movedAt < LOCAL_QUEUE_STALL_MS) return false;
        const seen = await probe(stack);
        if (seen.handling > 0 || seen.idleMs < LOCAL_QUEUE_STALL_MS) return false;
        const idleSince = Date.now() - seen.idleMs;
        // Stalled: no step for a while and no batch handled since. The runtime restarts (its
        // counts are carried over) and the draw is sent a step again.
        progress(
          `draw: the local jobs queue stalled in ${lastPhase}; its last batches:\n${stack.worker.queueLog().slice(-3).join("\n")}`,
        );
        carried = addUp(carried, seen);
        closeCpu(lastPhase);
        await stack.worker.restart();
        openCpu();
        await api.runDraw(sale.id);
        stalls.push({ phase: lastPhase, lostMs: Date.now() - idleSince });
        movedAt = Date.now();
        return false;
      },
      3_600_000,
    );
    const totalMs = performance.now() - started;
    closeCpu(lastPhase);
    const cpuMs = (role: string, phase?: string) =>
      cpuSegments.filter((c) => phase === undefined || c.phase === phase).reduce((n, c) => n + (c.cpu.cpuMs[role] ?? 0), 0);
    const othersMs = cpuSegments.reduce((n, c) => n + c.cpu.othersMs, 0);
    const cpu = {
      workerdMs: cpuMs("workerd"),
      gatewayMs: cpuMs("gateway"),
      redisMs: cpuMs("redis"),
      othersShare: othersMs / (cpuSegments.reduce((n, c) => n + c.cpu.wallMs, 0) * availableParallelism()),
    };
    const redisCommands = (await totalCommands(redis)) - redisBefore;
    const gateway = await stack.gateway.stats();
    const counted = addUp(carried, await probe(stack));

    const phases = DRAW_PHASES.map((phase, i): PhaseFigures => {
      const c = counted.counts[phase];
      const next = DRAW_PHASES.slice(i + 1)
        .map((p) => counted.counts[p]?.firstAt)
        .find((at) => at !== undefined);
      return {
        phase,
        ms: c ? (next ?? c.lastAt) - c.firstAt : 0,
        steps: c?.steps ?? 0,
        d1Queries: c?.queries ?? 0,
        d1RowsRead: c?.rowsRead ?? 0,
        d1RowsWritten: c?.rowsWritten ?? 0,
        d1Ms: c?.ms ?? 0,
        workerdMs: cpuMs("workerd", phase),
      };
    });
    const runCounts = Object.entries(counted.counts).filter(([bucket]) => bucket !== "api");
    const sum = (f: (c: D1Count) => number) => runCounts.reduce((n, [, c]) => n + f(c), 0);

    progress(`draw: verifying from the public routes (${Math.ceil(entries / DRAW_CHUNK_LEAVES)} pages)`);
    await stack.worker.fetch("/__probe/d1/reset", { method: "POST" });
    const verifyStart = performance.now();
    const verdict = await verifyDraw(WORKER_ORIGIN, sale.id, publicFetch(stack));
    const verifyMs = performance.now() - verifyStart;
    const verifyD1 = (await probe(stack)).counts.api?.rowsRead ?? 0;
    sampleHeap();
    return {
      entries,
      buckets: buckets.length,
      load,
      entry,
      largestRecord: largest,
      recordLimitBytes: Number(deployed.REDIS_MAX_RECORD_BYTES),
      phases,
      totalMs,
      jobs: counted.jobs["draw-step"] ?? 0,
      stalls,
      cpu,
      steps: phases.reduce((n, p) => n + p.steps, 0),
      redisCommands,
      gatewayRequests: gateway.requests,
      gatewayCommands: gateway.commands,
      d1: { queries: sum((c) => c.queries), rowsRead: sum((c) => c.rowsRead), rowsWritten: sum((c) => c.rowsWritten) },
      verify: { ...verdict, ms: verifyMs, d1RowsRead: verifyD1 },
      heapPeakBytes,
    };
  } finally {
    clearInterval(heapSampler);
    redis.disconnect();
    await stack.stop();
    await beacon.stop();
  }
}
