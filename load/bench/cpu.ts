// Server CPU per request in the mix production sends (section 2b): every request a new buyer
// with a token never seen before and an address of its own, the per-caller limits on as
// wrangler.toml sets them, and the settlement consumer running. GET /healthz (sent the same
// way), a warm refusal and accepted checkouts, in alternating rounds on one stack; workerd's
// CPU from /proc, an accepted round's until the queue has handled its orders.
//
// Settlement runs in the same workerd process as the requests, and so do Miniflare's local
// Queues and D1, which production runs elsewhere and bills by operations and rows, not as the
// Worker's CPU. So the stack's orders queue is consumed three ways, switched between rounds,
// and an accepted order's cost is split by difference, all in the one process:
//   a consumer that only acks       the request, and the local queue taking its message in and handing it over
//   the consumer, D1's batch faked  + the consumer's own work (parsing, statements, the outbox clear's Upstash call)
//   the consumer as deployed        + D1 taking and running the settlement's batch (local SQLite, its triggers)
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

/** How the orders queue is consumed in a round. */
type Consumer = "ack-only" | "no-d1" | "deployed";
const CONSUMERS: readonly Consumer[] = ["ack-only", "no-d1", "deployed"];

/**
 * The switch: the bundle's Worker as it is, but for the orders queue's handler, which runs as
 * POST /__probe/consumer/<how> last said, and counts the orders it handled (GET /__probe/handled).
 * "ack-only" acks the messages; "no-d1" runs the Worker's own consumer with D1's batch
 * answered at once, as if D1 had written the orders and had nothing to report (every other
 * D1 read goes to D1); "deployed" hands the batch to the Worker's own consumer.
 */
const SWITCH = `
import worker from "./index.js";
export * from "./index.js";
let consumer = "deployed";
let handled = 0;
const noBatches = (db) => ({
  prepare: (query) => db.prepare(query),
  batch: async (statements) => statements.map(() => ({ results: [], success: true, meta: {} })),
});
export default {
  fetch(request, env, ctx) {
    if (!request.url.includes("/__probe/")) return worker.fetch(request, env, ctx);
    const set = /\\/__probe\\/consumer\\/([a-z0-9-]+)$/.exec(request.url);
    if (set) consumer = set[1];
    return new Response(String(handled));
  },
  scheduled: (controller, env, ctx) => worker.scheduled(controller, env, ctx),
  async queue(batch, env, ctx) {
    if (batch.queue !== "flash-sale-orders") return worker.queue(batch, env, ctx);
    if (consumer === "ack-only") batch.ackAll();
    else await worker.queue(batch, consumer === "no-d1" ? { ...env, DB: noBatches(env.DB) } : env, ctx);
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
  /** Whether this part is the Worker's own CPU (in production too), not the local Queues' or D1's. */
  workersOwn?: boolean;
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
    for (const consumer of CONSUMERS) {
      // A sale each: the ack-only consumer leaves its orders in the outbox.
      const open = await api.createSale({ stock: total, name: `cpu: accepted (${consumer})` });
      contenders.push({
        name: `checkout, accepted [${consumer}]`,
        send: checkout(open.id),
        expect: "ACCEPTED",
        shots: await crowd(`accepted-${consumer}`),
        prepare: async () => void (await probe(`consumer/${consumer}`)),
        // Until the consumer has handled the round's orders (as deployed: they are in D1 and out of the outbox).
        settle: async () => {
          await eventually(
            `the ${consumer} consumer to handle sale ${open.id}'s orders`,
            async () =>
              consumer === "ack-only" ? (await probe("handled")) >= accepted : (await outboxSize(redis, open.id)) === 0,
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
    const acceptedMs = Object.fromEntries(CONSUMERS.map((c) => [c, kind(`checkout, accepted [${c}]`)])) as Record<
      Consumer,
      Figure
    >;
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
          workersOwn: true,
        }),
        row("checkout, accepted: the request, its message taken in and handed over", acceptedMs["ack-only"], {
          workersOwn: true,
        }),
        row("  + settlement: the consumer's own work", difference(acceptedMs["no-d1"], acceptedMs["ack-only"]), {
          workersOwn: true,
        }),
        row(
          "  + settlement: D1 taking and running its batch (local SQLite)",
          difference(acceptedMs.deployed, acceptedMs["no-d1"]),
          {
            workersOwn: false,
          },
        ),
        row("= checkout, accepted, with its settlement: all of it, as measured here", acceptedMs.deployed),
        row("= the same, the Worker's own CPU: all but local D1's", acceptedMs["no-d1"], {
          goal: CPU_GOALS.acceptedWithSettlement,
        }),
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
        "the Worker's own": r.workersOwn === undefined ? "" : r.workersOwn ? "yes" : "no: local D1",
        goal: r.goal === undefined ? "" : `<= ${r.goal}x ${r.vsHealthz <= r.goal ? "met" : "NOT met"}`,
      })),
    ),
  );
  log(
    `An accepted order's parts: the orders queue consumed three ways, switched between rounds (a consumer that only acks, the consumer with D1's batch faked, the consumer as deployed); the first row also holds the local queue's share (taking the message in, handing it over), production's Queues' in production. ${fixed(f.ordersPerMessage, 1)} orders per queue message (one per merged call).`,
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
