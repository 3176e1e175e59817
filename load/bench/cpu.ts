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
import { startStack } from "../../dev/stack/local-stack.ts";
import { pinStack, stackProcesses } from "../runner/cpu.ts";
import { planCrowd, type Shot } from "../runner/crowd.ts";
import { productionLimits, productionMix } from "../runner/production-mix.ts";
import { alternatingRounds, type Contender, type ContenderFigures } from "../runner/rounds.ts";
import { fixed, formatTable } from "../runner/table.ts";

/** Goals, as a multiple of GET /healthz's CPU per request (issue 26, item 5). */
export const CPU_GOALS = { acceptedWithSettlement: 1.3, warmRefusal: 1.15 } as const;

/** Where an accepted round's order messages go. */
type Route = "dropped" | "in-isolate" | "local-queue" | "deployed";
const ROUTES: readonly Route[] = ["dropped", "in-isolate", "local-queue", "deployed"];

/**
 * The switch: the bundle's Worker as it is, but for where the orders' messages go, as
 * POST /__probe/route/<how> last said; GET /__probe/handled counts the orders handled.
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
export default {
  fetch(request, env, ctx) {
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
  goal?: number;
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

/** The standard error of the mean of `values`. */
function standardError(values: number[]): number {
  const n = values.length;
  if (n < 2) return Number.NaN;
  const mean = values.reduce((a, b) => a + b, 0) / n;
  const variance = values.reduce((sum, v) => sum + (v - mean) ** 2, 0) / (n - 1);
  return Math.sqrt(variance / n);
}

async function scriptCalls(redis: IORedis): Promise<number> {
  const stats = await redis.info("commandstats");
  const calls = (command: string) => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  return calls("evalsha") + calls("eval");
}

export async function benchCpu({ perRound = 500, rounds = 48, inFlight = 50 } = {}): Promise<CpuFigures> {
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
        row("checkout, refused, warm (sold out)", kind("checkout, refused (warm)"), {
          goal: CPU_GOALS.warmRefusal,
          part: "worker",
        }),
        row("checkout, accepted: the request alone", acceptedMs.dropped, { part: "worker" }),
        row("  + settlement: the consumer's own work", difference(acceptedMs["in-isolate"], acceptedMs.dropped), {
          part: "worker",
        }),
        row("= checkout, accepted, with its settlement: the Worker's own CPU", acceptedMs["in-isolate"], {
          goal: CPU_GOALS.acceptedWithSettlement,
        }),
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
        goal: r.goal === undefined ? "" : `<= ${r.goal}x ${r.vsHealthz <= r.goal ? "met" : "NOT met"}`,
      })),
    ),
  );
  log(
    `An accepted order's parts: its message copied and dropped, handed to the Worker's consumer in the same isolate, or sent through the local queue (D1's batch faked, then as deployed), switched between rounds. ${fixed(f.ordersPerMessage, 1)} orders per queue message (one per merged call).`,
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
