// The order lifecycle against the hot path:
// 1. checkout throughput on a sale with a payment window against one without (orders final
//    once settled), alternating rounds, settlement running as in production: the window
//    adds D1 state and an expiry job per order (the ratio with its spread over the rounds:
//    this machine cannot tell a few per cent apart, so no goal is held to it);
// 2. how long after an unpaid order's expiry its unit can be bought again: a buyer retrying
//    every few milliseconds on a one-unit sale whose only order lets its window run out.
import type { Answer } from "../../dev/lib/api-client.ts";
import { eventually } from "../../dev/lib/wait.ts";
import type { Stack } from "../../dev/stack/local-stack.ts";
import type { Processes } from "../runner/cpu.ts";
import { planCrowd, type Shot } from "../runner/crowd.ts";
import { alternatingRounds, type ContenderFigures, contenderTable, ratioSpread } from "../runner/rounds.ts";
import { latencyFigures } from "../runner/stats.ts";
import { fixed } from "../runner/table.ts";

/** The payment window of the expiry figure: short, so the bench does not wait long. */
const EXPIRY_WINDOW_SEC = 1;
const RETRY_EVERY_MS = 10;

export interface LifecycleFigures {
  inFlight: number;
  throughput: ContenderFigures[];
  /** Req/s with a payment window over req/s without, and its lowest and highest over the rounds. */
  ratio: number;
  ratioSpread: { min: number; max: number };
  expiry: { samples: number; p50Ms: number; maxMs: number; valuesMs: number[] };
}

/** One unit sold, left unpaid; the time from its expiresAt to a second buyer's 202. */
async function expiryToBuyable(stack: Stack, tag: string, i: number): Promise<number> {
  const { api } = stack;
  const sale = await api.createSale({ stock: 1, name: `expiry ${i}`, paymentWindowSec: EXPIRY_WINDOW_SEC });
  const [first, second] = (await planCrowd(api, 2, 1, `expiry-${tag}-${i}-`)) as [Shot, Shot];
  const bought = await api.checkout(sale.id, first.token);
  if (bought.status !== 202 || !bought.orderId) throw new Error(`the first buyer was refused: ${bought.code}`);
  const orderId = bought.orderId;
  const expiresAt = await eventually(
    "the unpaid order to settle with its expiresAt",
    async () => {
      const { body } = await api.order(orderId, first.token);
      return body?.expiresAt ? Date.parse(body.expiresAt) : undefined;
    },
    30_000,
  );
  const deadline = Date.now() + 30_000;
  for (;;) {
    const answer: Answer = await api.checkout(sale.id, second.token);
    if (answer.status === 202) return Date.now() - expiresAt;
    if (answer.code !== "SOLD_OUT") throw new Error(`the second buyer got ${answer.code}`);
    if (Date.now() > deadline) throw new Error("the unit did not come back within 30 s of its expiry");
    await new Promise((resolve) => setTimeout(resolve, RETRY_EVERY_MS));
  }
}

export async function benchLifecycle(
  stack: Stack,
  opts: { processes: Processes; inFlight?: number; perRound?: number; rounds?: number; expiries?: number },
): Promise<LifecycleFigures> {
  const { api } = stack;
  const inFlight = opts.inFlight ?? 50;
  const perRound = opts.perRound ?? 1_500;
  const rounds = opts.rounds ?? 3;
  const warmup = 300;
  const tag = Date.now().toString(36);
  const total = warmup + rounds * perRound;
  const final = await api.createSale({ stock: total, name: "lifecycle: no payment window", paymentWindowSec: 0 });
  const windowed = await api.createSale({ stock: total, name: "lifecycle: 600 s window", paymentWindowSec: 600 });
  const [plainBuyers, windowBuyers] = await Promise.all([
    planCrowd(api, total, 1, `lc-final-${tag}-`),
    planCrowd(api, total, 1, `lc-window-${tag}-`),
  ]);
  const throughput = await alternatingRounds(
    [
      { name: "paymentWindowSec 0", send: (s) => api.checkout(final.id, s.token), expect: "ACCEPTED", shots: plainBuyers },
      { name: "paymentWindowSec 600", send: (s) => api.checkout(windowed.id, s.token), expect: "ACCEPTED", shots: windowBuyers },
    ],
    { rounds, perRound, warmup, inFlight, processes: opts.processes },
  );
  const [without, withWindow] = throughput as [ContenderFigures, ContenderFigures];
  const valuesMs = await Promise.all(Array.from({ length: opts.expiries ?? 5 }, (_, i) => expiryToBuyable(stack, tag, i)));
  const latency = latencyFigures(valuesMs);
  return {
    inFlight,
    throughput,
    ratio: withWindow.reqPerSec / without.reqPerSec,
    ratioSpread: ratioSpread(withWindow, without),
    expiry: { samples: valuesMs.length, p50Ms: latency.p50, maxMs: latency.max, valuesMs },
  };
}

export function printLifecycle(f: LifecycleFigures, log: (text: string) => void): void {
  log(`\n8. The order lifecycle and the hot path: accepted checkouts, ${f.inFlight} in flight, alternating rounds`);
  log(contenderTable(f.throughput, "sale"));
  log(
    `with a payment window, checkout runs at ${fixed(f.ratio, 2)}x the throughput without (${fixed(f.ratioSpread.min, 2)}-${fixed(f.ratioSpread.max, 2)}x round by round)`,
  );
  log(
    `expiry to buyable again (${f.expiry.samples} unpaid orders, ${EXPIRY_WINDOW_SEC} s window, a buyer retrying every ${RETRY_EVERY_MS} ms): p50 ${fixed(f.expiry.p50Ms, 0)} ms, max ${fixed(f.expiry.maxMs, 0)} ms`,
  );
}
