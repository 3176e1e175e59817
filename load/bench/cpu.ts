// Server CPU per request in the mix production sends (section 2b): every request a new buyer
// with a token never seen before and an address of its own, the per-caller limits on as
// wrangler.toml sets them, and the settlement consumer running. GET /healthz (sent the same
// way), a warm refusal and accepted checkouts, in alternating rounds on one stack; workerd's
// CPU from /proc, an accepted round's until its orders are handled.
//
// Settlement runs in the same workerd process as the requests, and so do Miniflare's local
// Queues and D1, which production runs elsewhere and bills by operations and rows, not as the
// Worker's CPU. So an accepted order's message goes four ways, switched between rounds, and
// its cost is split by difference, all in the one process:
//   copied and dropped                  the request alone (the message's JSON written and read, as a send and a delivery do)
//   handed to the consumer in-isolate   + the consumer's own work (parsing, statements, the outbox clear's Upstash call), D1's batch faked
//   through the local queue             + the local queue taking the message in and delivering it (production's Queues)
//   through the local queue, as deployed  + local D1 taking and running the settlement's batch (production's D1)
// The first two are the Worker's own CPU; in production the consumer runs as an invocation of
// its own, whose dispatch (one per batch of up to ten messages) the in-isolate handover leaves out.
// The switch is a wrapper around the Worker's own bundle (StackOptions.wrapper): as deployed,
// it hands every request and every batch to the bundle untouched.
import { Redis as IORedis } from "ioredis";
import type { Answer } from "../../dev/lib/api-client.ts";
import { outboxSize } from "../../dev/lib/sale-buckets.ts";
import { eventually } from "../../dev/lib/wait.ts";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";
import { measureCpu, type Processes, pinStack, stackProcesses } from "../runner/cpu.ts";
import { planCrowd, type Shot } from "../runner/crowd.ts";
import { callerHeaders, productionLimits, productionMix } from "../runner/production-mix.ts";
import { alternatingRounds, type Contender, type ContenderFigures } from "../runner/rounds.ts";
import { fixed, formatTable } from "../runner/table.ts";

/** Where an accepted round's order messages go. */
type Route = "dropped" | "in-isolate" | "local-queue" | "deployed";
const ROUTES: readonly Route[] = ["dropped", "in-isolate", "local-queue", "deployed"];

/**
 * The switch: the bundle's Worker as it is, but for where the orders' messages go, as
 * POST /__probe/route/<how> last said; POST /__probe/handled counts the orders handled.
 * "dropped" and "in-isolate" give the Worker an ORDERS binding of the switch's own: a send
 * copies the message through JSON (as a send and a delivery serialize it), then drops it,
 * or hands it at once to the Worker's own consumer in a batch of one, in the sending
 * request's isolate. "local-queue" sends to the local queue, whose batches the Worker's
 * consumer handles; in both, D1's batch is answered at once, as if D1 had written the orders
 * and had nothing to report (every other D1 read goes to D1). "deployed" changes nothing.
 */
const SWITCH = `
import worker from "./index.js";
export * from "./index.js";
let route = "deployed";
let handled = 0;
const noBatches = (db) => ({
  prepare: (query) => db.prepare(query),
  batch: async (statements) => statements.map(() => ({ results: [], success: true, meta: {} })),
});
const orderBatch = (body) => ({
  queue: "flash-sale-orders",
  messages: [{ id: crypto.randomUUID(), timestamp: new Date(), body, attempts: 1, ack() {}, retry() {} }],
  ackAll() {},
  retryAll() {},
});
const noContext = { waitUntil() {}, passThroughOnException() {} };
// Per env object, as the Worker's own memos are: a new env per request would cost them.
const switched = new WeakMap();
function switchedEnv(env) {
  let envs = switched.get(env);
  if (!envs) {
    const consumerEnv = { ...env, DB: noBatches(env.DB) };
    const producer = (handOver) => ({
      async send(body) {
        const delivered = JSON.parse(JSON.stringify(body));
        if (handOver) await worker.queue(orderBatch(delivered), consumerEnv, noContext);
        handled += delivered.orders.length;
      },
    });
    envs = {
      dropped: { ...env, ORDERS: producer(false) },
      "in-isolate": { ...env, ORDERS: producer(true) },
      consumer: consumerEnv,
    };
    switched.set(env, envs);
  }
  return envs;
}
// The body's requests handed to the Worker one after another in this isolate, each answer
// read ("dispatch"), or only built ("build": what the probe costs without them).
// Answers with the count of each status.
async function inIsolate(request, env, ctx, dispatch) {
  const origin = new URL(request.url).origin;
  const statuses = {};
  for (const { method, path, headers } of await request.json()) {
    const built = new Request(origin + path, { method, headers });
    if (!dispatch) continue;
    const answer = await worker.fetch(built, env, ctx);
    await answer.arrayBuffer();
    statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
  }
  return Response.json(statuses);
}
export default {
  fetch(request, env, ctx) {
    const inside = /\\/__probe\\/(dispatch|build)$/.exec(request.url);
    if (inside) return inIsolate(request, env, ctx, inside[1] === "dispatch");
    if (!request.url.includes("/__probe/")) {
      const own = route === "dropped" || route === "in-isolate" ? switchedEnv(env)[route] : env;
      return worker.fetch(request, own, ctx);
    }
    const set = /\\/__probe\\/route\\/([a-z-]+)$/.exec(request.url);
    if (set) route = set[1];
    return new Response(String(handled));
  },
  scheduled: (controller, env, ctx) => worker.scheduled(controller, env, ctx),
  async queue(batch, env, ctx) {
    if (batch.queue !== "flash-sale-orders") return worker.queue(batch, env, ctx);
    await worker.queue(batch, route === "local-queue" ? switchedEnv(env).consumer : env, ctx);
    for (const message of batch.messages) handled += message.body.orders.length;
  },
};
`;

export interface CpuRow {
  request: string;
  /** workerd CPU per request, or per accepted order for a part (ms). */
  msPerRequest: number;
  /** As a multiple of GET /healthz's. */
  vsHealthz: number;
  /** The standard error of that multiple, from the rounds' own multiples (each round against the same round of /healthz). */
  vsHealthzSe: number;
  /** Whose CPU this part is in production: the Worker's, or Queues' or D1's (which run in workerd here). */
  part?: "worker" | "queues" | "d1";
}

export interface CpuFigures {
  pinning: string;
  inFlight: number;
  perRound: number;
  rounds: number;
  /** The per-caller limits the mix ran with (requests/s per isolate, burst 2x), from wrangler.toml. */
  limits: { ip: string; user: string };
  /** Accepted orders per queue message (one message per merged call that reserved). */
  ordersPerMessage: number;
  rows: CpuRow[];
  /** Every kind measured: requests, throughput, latency, others' share of the cores. */
  measured: ContenderFigures[];
  /** The Worker's own JavaScript per request, without workerd's HTTP and Miniflare's layers. */
  javascript: JavaScriptFigures;
}

export interface JavaScriptFigures {
  rounds: number;
  perRound: number;
  /** workerd CPU per request handed to the Worker inside its isolate (µs), the probe's own building of it left out. */
  healthzUs: number;
  refusalUs: number;
  /** The warm refusal's excess over /healthz (µs), and its standard error over the rounds. */
  excessUs: number;
  excessUsSe: number;
}

type InIsolateRequest = { method: string; path: string; headers: Record<string, string> };

/**
 * The Worker's own JavaScript per request: GET /healthz and warm refusals, each a new buyer's
 * token and a new address as in the mix, handed to the Worker one after another inside its
 * isolate (the switch's /__probe/dispatch), so neither workerd's HTTP nor Miniflare's entry
 * and assets workers take part; the same requests only built (/__probe/build) are subtracted.
 * Alternating rounds; workerd's CPU from /proc.
 */
async function javaScriptAlone(
  api: Stack["api"],
  processes: Processes,
  soldOutId: string,
  tag: string,
  { rounds = 12, perRound = 2_000 } = {},
): Promise<JavaScriptFigures> {
  const headers = callerHeaders();
  const shots = await planCrowd(api, 2 * (rounds + 1) * perRound, 1, `cpu-js-${tag}-`);
  const kinds: Record<"healthz" | "refusal", { request: (shot: Shot) => InIsolateRequest; status: number }> = {
    healthz: { request: (shot) => ({ method: "GET", path: "/healthz", headers: headers(shot) }), status: 200 },
    refusal: {
      request: (shot) => ({ method: "POST", path: `/api/sales/${soldOutId}/checkout`, headers: headers(shot) }),
      status: 409,
    },
  };
  let next = 0;
  const usPerRequest = async (how: "build" | "dispatch", requests: InIsolateRequest[], status: number) => {
    const { result, cpu } = await measureCpu(processes, async () => {
      const res = await api.fetch(`/__probe/${how}`, { method: "POST", body: JSON.stringify(requests) });
      return (await res.json()) as Record<string, number>;
    });
    if (how === "dispatch" && result[status] !== requests.length) {
      throw new Error(`in-isolate requests: expected ${requests.length} answered ${status}, got ${JSON.stringify(result)}`);
    }
    return ((cpu.cpuMs.workerd ?? Number.NaN) * 1000) / requests.length;
  };
  const us = { healthz: [] as number[], refusal: [] as number[] };
  // Round 0 warms the probe's path up and is not counted.
  for (let round = 0; round <= rounds; round++) {
    for (const kind of ["healthz", "refusal"] as const) {
      const { request, status } = kinds[kind];
      const requests = shots.slice(next, next + perRound).map(request);
      next += perRound;
      const built = await usPerRequest("build", requests, status);
      const dispatched = await usPerRequest("dispatch", requests, status);
      if (round > 0) us[kind].push(dispatched - built);
    }
  }
  const excess = us.refusal.map((r, i) => r - (us.healthz[i] as number));
  return {
    rounds,
    perRound,
    healthzUs: mean(us.healthz),
    refusalUs: mean(us.refusal),
    excessUs: mean(excess),
    excessUsSe: standardError(excess),
  };
}

/** workerd CPU per request (ms) of a kind, or of a part (a difference of kinds), as a whole and round by round. */
interface Figure {
  ms: number;
  byRound: number[];
}

const difference = (a: Figure, b: Figure): Figure => ({
  ms: a.ms - b.ms,
  byRound: a.byRound.map((ms, round) => ms - (b.byRound[round] ?? Number.NaN)),
});

const mean = (values: number[]): number => values.reduce((a, b) => a + b, 0) / values.length;

/** The standard error of the mean of `values`. */
function standardError(values: number[]): number {
  const n = values.length;
  if (n < 2) return Number.NaN;
  const average = mean(values);
  const variance = values.reduce((sum, v) => sum + (v - average) ** 2, 0) / (n - 1);
  return Math.sqrt(variance / n);
}

async function scriptCalls(redis: IORedis): Promise<number> {
  const stats = await redis.info("commandstats");
  const calls = (command: string) => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  return calls("evalsha") + calls("eval");
}

export async function benchCpu({
  perRound = 500,
  rounds = 48,
  inFlight = 50,
  javascript = { rounds: 12, perRound: 2_000 },
} = {}): Promise<CpuFigures> {
  const limits = productionLimits();
  const stack = await startStack({ vars: limits, wrapper: SWITCH });
  const redis = new IORedis(stack.redis.url);
  try {
    const processes = stackProcesses(stack);
    const pinning = pinStack(processes);
    const { api } = stack;
    const warmup = 500;
    const total = warmup + rounds * perRound;
    const tag = Date.now().toString(36);
    const mix = productionMix(api);
    const probe = async (path: string) => Number(await (await api.fetch(`/__probe/${path}`, { method: "POST" })).text());
    const crowd = (kind: string) => planCrowd(api, total, 1, `cpu-${kind}-${tag}-`);
    let accepted = 0;
    const checkout =
      (saleId: string) =>
      async (shot: Shot): Promise<Answer> => {
        const answer = await mix.checkout(saleId)(shot);
        if (answer.status === 202) accepted++;
        return answer;
      };

    const contenders: Contender[] = [
      {
        // Sent as the checkouts are, with a token and an address of its own.
        name: "GET /healthz",
        send: mix.healthz,
        expect: "OK",
        shots: await crowd("healthz"),
      },
    ];
    // Sold out: its one unit taken, so every isolate that asks knows at once and refuses.
    const soldOut = await api.createSale({ stock: 1, name: "cpu: sold out" });
    const [first] = await planCrowd(api, 1, 1, `cpu-first-${tag}-`);
    await api.checkout(soldOut.id, (first as Shot).token);
    contenders.push({
      name: "checkout, refused (warm)",
      send: checkout(soldOut.id),
      expect: "SOLD_OUT",
      shots: await crowd("refused"),
    });
    for (const route of ROUTES) {
      // A sale each: a dropped message leaves its orders in the outbox.
      const open = await api.createSale({ stock: total, name: `cpu: accepted (${route})` });
      contenders.push({
        name: `checkout, accepted [${route}]`,
        send: checkout(open.id),
        expect: "ACCEPTED",
        shots: await crowd(`accepted-${route}`),
        prepare: async () => void (await probe(`route/${route}`)),
        // Until the round's orders are handled (settled: in D1, or D1's batch faked, and out of the outbox).
        settle: async () => {
          await eventually(
            `the ${route} orders of sale ${open.id} to be handled`,
            async () => (route === "dropped" ? (await probe("handled")) >= accepted : (await outboxSize(redis, open.id)) === 0),
            120_000,
          );
        },
      });
    }
    const callsBefore = await scriptCalls(redis);
    const acceptedBefore = accepted;
    const measured = await alternatingRounds(contenders, { rounds, perRound, warmup, inFlight, processes });
    const ordersPerMessage = (accepted - acceptedBefore) / Math.max(1, (await scriptCalls(redis)) - callsBefore);
    const alone = await javaScriptAlone(api, processes, soldOut.id, tag, javascript);

    // Each figure as a whole and round by round: a part of an accepted order is a difference of two kinds.
    const kind = (name: string): Figure => {
      const m = measured.find((f) => f.name === name);
      return {
        ms: m?.cpuMsPerRequest.workerd ?? Number.NaN,
        byRound: m?.cpuMsPerRequestByRound.map((r) => r.workerd ?? Number.NaN) ?? [],
      };
    };
    const healthz = kind("GET /healthz");
    const row = (request: string, figure: Figure, extra: Partial<CpuRow> = {}): CpuRow => ({
      request,
      msPerRequest: figure.ms,
      vsHealthz: figure.ms / healthz.ms,
      vsHealthzSe: standardError(figure.byRound.map((ms, round) => ms / (healthz.byRound[round] ?? Number.NaN))),
      ...extra,
    });
    const acceptedMs = Object.fromEntries(ROUTES.map((r) => [r, kind(`checkout, accepted [${r}]`)])) as Record<Route, Figure>;
    return {
      pinning,
      inFlight,
      perRound,
      rounds,
      limits: { ip: limits.IP_RATE_LIMIT, user: limits.USER_RATE_LIMIT },
      ordersPerMessage,
      rows: [
        row("GET /healthz (a new token and address each)", healthz),
        row("checkout, refused, warm (sold out)", kind("checkout, refused (warm)"), { part: "worker" }),
        row("checkout, accepted: the request alone", acceptedMs.dropped, { part: "worker" }),
        row("  + settlement: the consumer's own work", difference(acceptedMs["in-isolate"], acceptedMs.dropped), {
          part: "worker",
        }),
        row("= checkout, accepted, with its settlement: the Worker's own CPU", acceptedMs["in-isolate"]),
        row(
          "  + the local queue taking the message in and delivering it",
          difference(acceptedMs["local-queue"], acceptedMs["in-isolate"]),
          { part: "queues" },
        ),
        row(
          "  + local D1 taking and running the settlement's batch (SQLite)",
          difference(acceptedMs.deployed, acceptedMs["local-queue"]),
          { part: "d1" },
        ),
        row("= the same, all of it as measured here", acceptedMs.deployed),
      ],
      measured,
      javascript: alone,
    };
  } finally {
    redis.disconnect();
    await stack.stop();
  }
}

export function printCpu(f: CpuFigures, log: (text: string) => void): void {
  log(
    `\n2b. Server CPU per request in production's mix: a new buyer's token and an address of its own on every request, per-caller limits as wrangler.toml sets them (${f.limits.ip}/s per address, ${f.limits.user}/s per user), settlement running; ${f.rounds} alternating rounds of ${f.perRound}, ${f.inFlight} in flight, on one stack, workerd's CPU from /proc; ${f.pinning}`,
  );
  log(
    formatTable(
      f.rows.map((r) => ({
        request: r.request,
        "workerd CPU ms": fixed(r.msPerRequest, 3),
        "x healthz": fixed(r.vsHealthz, 2),
        "± (standard error)": fixed(r.vsHealthzSe, 2),
        "whose in production": r.part === undefined ? "" : { worker: "the Worker's", queues: "Queues'", d1: "D1's" }[r.part],
      })),
    ),
  );
  log(
    `An accepted order's parts: its message copied and dropped, handed to the Worker's consumer in the same isolate, or sent through the local queue (D1's batch faked, then as deployed), switched between rounds. ${fixed(f.ordersPerMessage, 1)} orders per queue message (one per merged call).`,
  );
  const js = f.javascript;
  const healthzMs = f.rows[0]?.msPerRequest ?? Number.NaN;
  log(
    `The Worker's own JavaScript per request (${js.rounds} alternating rounds of ${js.perRound}, handed to it inside its isolate: no HTTP, no Miniflare layer): GET /healthz ${fixed(js.healthzUs, 1)} us, warm refusal ${fixed(js.refusalUs, 1)} us; the refusal's excess ${fixed(js.excessUs, 1)} ± ${fixed(js.excessUsSe, 1)} us, ${fixed(js.excessUs / 1000 / healthzMs, 3)}x /healthz's whole CPU above.`,
  );
  log(
    formatTable(
      f.measured.map((m) => ({
        measured: m.name,
        requests: m.requests,
        "req/s": fixed(m.reqPerSec, 0),
        "p50 ms": fixed(m.p50Ms),
        "workerd CPU ms/req": fixed(m.cpuMsPerRequest.workerd as number, 3),
        "others' share": `${fixed(m.othersShare * 100, 0)}%${m.interfered ? " INTERFERED" : ""}`,
      })),
    ),
  );
}
