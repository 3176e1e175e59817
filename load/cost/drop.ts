// One drop, priced: the counts per action (load/cost/actions.ts) times how often a drop of N
// buyers on S units does each, at the published prices, with the busiest second's Upstash
// commands and the largest record against one database's limits. A closed form over a
// timeline every term of which is stated here: the buyers wait `minutes` on the page before
// the start (in the line's pre-queue, or with the draw's entries open), polling; then:
//   open    every buyer checks out once at the start, within one second; the stock is sold
//           in it and the rest refused (warm, from the isolates' memo)
//   fifo    the line lets in the sale's admitPerSec (the default's) places a second; each
//   random  admitted buyer polls once more for the pass and buys with it; the others poll at
//           the cadence the server tells them until the sale sells out (random: the pre-queue
//           ticket is placed by its first poll near the front, as the Worker decides it)
//   draw    every buyer enters once; the run draws the winners, who are offered an order each
// Every order is paid (its expiry job still runs, finding it paid) and raises one order
// event to one endpoint. The design card's drop is the open drop with its checkout: a
// rate-limit call and an EVAL for every attempt, one queue message and one settlement per order.
import { readFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "../../dev/lib/project.ts";
import { workerConfig } from "../../dev/stack/wrangler-cache.ts";
import { bucketsFor, MAX_BYTES_PER_BUYER_RECORD } from "../../src/shared/keys.ts";
import { DEFAULT_QUEUE } from "../../src/shared/limits.ts";
import { waitingRetryAfterSec } from "../../src/shared/waiting-room-cadence.ts";
import { estimatedPlace } from "../../src/shared/waiting-room-draw.ts";
import { INPUTS } from "../model/inputs.ts";
import { isolates, WAITING_ROOM } from "../model/waiting-room.ts";
import type { ActionCost, ActionName, Counts } from "./actions.ts";
import { PRICES, UPSTASH_LIMITS } from "./prices.ts";
import type { PushFigures } from "./push.ts";

export const MODES = ["open", "fifo", "random", "draw"] as const;
export type Mode = (typeof MODES)[number];

export interface Drop {
  buyers: number;
  stock: number;
  mode: Mode;
  /** The page's poll, every this many seconds; undefined: the cadence the storefront and the server give it. */
  pollSec?: number;
  /** How long the buyers wait on the page before the start. */
  minutes: number;
}

/** What a drop uses of each service. */
export interface Usage {
  workerRequests: number;
  /** Upper bound: this machine's CPU per request (INPUTS, `npm run bench` section 2b). */
  workerCpuMs: number;
  upstashCommands: number;
  upstashBytes: number;
  queueMessages: number;
  d1RowsRead: number;
  d1RowsWritten: number;
}

/** Nothing used yet. */
const NO_USE: Usage = {
  workerRequests: 0,
  workerCpuMs: 0,
  upstashCommands: 0,
  upstashBytes: 0,
  queueMessages: 0,
  d1RowsRead: 0,
  d1RowsWritten: 0,
};

export interface Bill {
  workersRequests: number;
  workersCpu: number;
  upstashCommands: number;
  queues: number;
  d1RowsRead: number;
  d1RowsWritten: number;
  total: number;
}

export interface PricedDrop {
  drop: Drop;
  /** How many times the drop does each action. */
  times: Partial<Record<ActionName, number>>;
  /** Isolate-seconds of each shared cost (a line polled, pages read, refusals counted). */
  isolateSeconds: Partial<Record<ActionName, number>>;
  /** How the page polled, as priced. */
  cadence: string;
  usage: Usage;
  bill: Bill;
  /** The busiest second's Upstash commands, and when it is. */
  peak: { commandsPerSec: number; when: string; limit: number };
  /** The largest record: entries in one bucket of the sale's split, at the split's bound per entry. */
  largestRecord: { what: string; entries: number; bytes: number; limit: number };
  fits: boolean;
}

/** A page constant, read from the storefront's own source (public/assets). */
function pageConstant(file: string, name: string): number {
  const source = readFileSync(path.join(ROOT, "public", "assets", file), "utf8");
  const match = new RegExp(`const ${name} = ([0-9_]+);`).exec(source);
  if (!match?.[1]) throw new Error(`public/assets/${file} no longer sets ${name}`);
  return Number(match[1].replaceAll("_", ""));
}

/** How often the storefront reads the sale page, and a draw while its entries are open (s). */
export const storefrontCadence = () => ({
  salePageSec: pageConstant("storefront.js", "SALE_POLL_MS") / 1000,
  drawOpenSec: pageConstant("draw-panel.js", "QUIET_POLL_MS") / 1000,
});

/** The buyers simulated for the line's cadence: each stands for buyers / this many. */
const SAMPLES = 2_000;

interface LineFigures {
  /** Polls before the start, after it while waiting, and those that found a pass. */
  prePolls: number;
  linePolls: number;
  admittedPolls: number;
  /** Random sales: pre-queue tickets placed by a poll near the front. */
  placements: number;
  /** Seconds from the start to the last poll. */
  lineSec: number;
}

/**
 * Every buyer's polls in a line, as the Worker answers them (the retryAfterSec it tells a
 * waiting buyer, src/shared/waiting-room-cadence.ts: by the distance from the front), for
 * SAMPLES buyers spread over the line, each standing for its share; a page stops once its
 * buyer is let in or the sale sold out. With `pollSec` the page polls at that pace instead.
 */
function linePolls(drop: Drop, admitPerSec: number): LineFigures {
  const { buyers, stock, minutes, pollSec } = drop;
  const startsAt = minutes * 60_000;
  const soldOutAt = startsAt + (Math.min(stock, buyers) / admitPerSec) * 1000;
  const samples = Math.min(SAMPLES, buyers);
  const weight = buyers / samples;
  const figures: LineFigures = { prePolls: 0, linePolls: 0, admittedPolls: 0, placements: 0, lineSec: 0 };
  const admittedAt = (now: number) => Math.min(buyers, Math.max(0, Math.floor(((now - startsAt) / 1000) * admitPerSec)));
  for (let s = 0; s < samples; s++) {
    const place = Math.floor(((s + 0.5) / samples) * buyers) + 1;
    // Its draw key, for a random sale: the place's share of the line (estimatedPlace reads 13 hex digits).
    const drawKey = Math.floor(((place - 0.5) / buyers) * 16 ** 13)
      .toString(16)
      .padStart(13, "0")
      .padEnd(64, "0");
    let placed = drop.mode !== "random";
    // Pages arrive spread over a second, not all on its edge (a fixed spread: the same bill every run).
    for (let now = ((s * 0.618_034) % 1) * 1000; ; ) {
      const admitted = admittedAt(now);
      const started = now >= startsAt;
      if (started && !placed && estimatedPlace(drawKey, { drawn: buyers, admitted, admitPerSec }) === undefined) {
        placed = true;
        figures.placements += weight;
      }
      if (place <= admitted) {
        figures.admittedPolls += weight;
        figures.lineSec = Math.max(figures.lineSec, (now - startsAt) / 1000);
        break;
      }
      if (started) figures.linePolls += weight;
      else figures.prePolls += weight;
      if (now >= soldOutAt) {
        figures.lineSec = Math.max(figures.lineSec, (now - startsAt) / 1000);
        break;
      }
      // Before the start a random sale's ticket has no place yet: the wait until the start is all it is told.
      const ahead = drop.mode === "random" && !started ? 0 : place - admitted - 1;
      const untilStart = Math.max(0, Math.ceil((startsAt - now) / 1000));
      now += (pollSec ?? waitingRetryAfterSec(untilStart + ahead / admitPerSec, untilStart)) * 1000;
    }
  }
  return figures;
}

const count = (n: number) => Math.round(n).toLocaleString("en-US");

export async function priceDrop(drop: Drop, actions: readonly ActionCost[]): Promise<PricedDrop> {
  const cost = (action: ActionName): ActionCost => {
    const found = actions.find((a) => a.action === action);
    if (!found) throw new Error(`no count for ${action}: measure the actions again`);
    return found;
  };
  const { buyers, stock, mode, minutes } = drop;
  const sold = Math.min(buyers, stock);
  const waitSec = minutes * 60;
  const times: PricedDrop["times"] = {};
  const isolateSeconds: PricedDrop["isolateSeconds"] = {};
  const did = (action: ActionName, n: number) => {
    times[action] = (times[action] ?? 0) + n;
  };
  /** `perSec` requests a second for `sec` seconds share `action`'s cost per isolate and second. */
  const shared = (action: ActionName, perSec: number, sec: number) => {
    if (perSec > 0) isolateSeconds[action] = (isolateSeconds[action] ?? 0) + isolates(perSec) * sec;
  };
  const page = storefrontCadence();
  let cadence: string;
  const peaks: { when: string; commands: number }[] = [];
  const commandsOf = (action: ActionName) => cost(action).counts.upstashCommands;
  const sharedCommandsOf = (action: ActionName) => cost(action).shared?.upstashCommands ?? 0;

  // Every order, once sold: paid, its expiry job run, one order event delivered.
  const afterSale = () => {
    did("pay", sold);
    did("expiry-job-paid", sold);
    did("order-event", sold);
  };

  if (mode === "open" || mode === "draw") {
    const pollSec = drop.pollSec ?? page.salePageSec;
    const reads = (buyers * waitSec) / pollSec;
    did("sale-page", reads);
    shared("sale-page", reads / waitSec, waitSec);
    cadence = drop.pollSec
      ? `the page polled every ${pollSec} s`
      : `the sale page read every ${pollSec} s (the storefront's)${mode === "draw" ? `, the draw every ${page.drawOpenSec} s` : ""}`;
    if (mode === "draw" && drop.pollSec === undefined) {
      const drawReads = (buyers * waitSec) / page.drawOpenSec;
      did("draw-read", drawReads);
      shared("draw-read", drawReads / waitSec, waitSec);
    }
    const pageCommandsPerSec = isolates(reads / waitSec) * sharedCommandsOf("sale-page");
    if (mode === "open") {
      did("checkout-500", sold);
      did("warm-refusal", buyers - sold);
      shared("warm-refusal", buyers, 1);
      peaks.push({
        when: "the start's first second (every buyer checks out in it)",
        commands: sold * commandsOf("checkout-500") + isolates(buyers) * sharedCommandsOf("warm-refusal") + pageCommandsPerSec,
      });
    } else {
      did("draw-entry", buyers);
      did("draw-run-entry", buyers);
      did("draw-run-winner", sold);
      const entriesPerSec = (buyers / waitSec) * WAITING_ROOM.joinPeakFactor;
      peaks.push({
        when: `entering, the busiest second (${WAITING_ROOM.joinPeakFactor}x the mean)`,
        commands: entriesPerSec * commandsOf("draw-entry") + pageCommandsPerSec,
      });
    }
  } else {
    const admitPerSec = DEFAULT_QUEUE.admitPerSec;
    const line = linePolls(drop, admitPerSec);
    did(mode === "fifo" ? "join" : "join-random", buyers);
    did("poll", line.prePolls + line.linePolls);
    did("poll-admitted", line.admittedPolls);
    did("placement", line.placements);
    did("checkout-pass", sold);
    const lineSec = Math.max(1, line.lineSec);
    for (const action of drop.pollSec ? (["poll"] as const) : (["poll", "sale-page"] as const)) {
      // The storefront reads the sale at the line's pace beside each poll (public/assets/storefront.js).
      if (action === "sale-page") did(action, line.prePolls + line.linePolls);
      shared(action, line.prePolls / waitSec, waitSec);
      shared(action, line.linePolls / lineSec, lineSec);
    }
    cadence = drop.pollSec
      ? `the line polled every ${drop.pollSec} s`
      : `the line polled as the server says (retryAfterSec: up to 15 s far from the front, 1 s near it) and the sale page read at the same pace, ${admitPerSec} places let in a second`;
    const joinsPerSec = (buyers / waitSec) * WAITING_ROOM.joinPeakFactor;
    const progressPerSec = (pollsPerSec: number) => isolates(pollsPerSec) * sharedCommandsOf("poll");
    peaks.push({
      when: `joining, the busiest second (${WAITING_ROOM.joinPeakFactor}x the mean)`,
      commands: joinsPerSec * commandsOf(mode === "fifo" ? "join" : "join-random") + progressPerSec(line.prePolls / waitSec),
    });
    peaks.push({
      when: "letting in, each second",
      commands:
        admitPerSec * (commandsOf("poll-admitted") + commandsOf("checkout-pass")) +
        (line.placements / lineSec) * commandsOf("placement") +
        progressPerSec(line.linePolls / lineSec),
    });
  }
  afterSale();

  // What the drop uses: each action's own counts times how often, and the shared ones per isolate-second.
  const usage: Usage = { ...NO_USE };
  const use = (c: Counts, n: number, cpuMs: number) => {
    usage.workerRequests += c.workerRequests * n;
    usage.workerCpuMs += c.workerRequests * n * cpuMs;
    usage.upstashCommands += c.upstashCommands * n;
    usage.upstashBytes += (c.upstashRequestBytes + c.upstashResponseBytes) * n;
    usage.queueMessages += c.queueMessages * n;
    usage.d1RowsRead += c.d1RowsRead * n;
    usage.d1RowsWritten += c.d1RowsWritten * n;
  };
  const CHECKOUTS: ActionName[] = ["checkout-50", "checkout-500", "checkout-pass", "design-card"];
  for (const [action, n] of Object.entries(times) as [ActionName, number][]) {
    const c = cost(action);
    const own = c.shared ? withoutUpstash(c.counts) : c.counts;
    use(own, n, CHECKOUTS.includes(action) ? INPUTS.cpuMsPerCheckout : INPUTS.cpuMsPerLocalRefusal);
  }
  for (const [action, seconds] of Object.entries(isolateSeconds) as [ActionName, number][]) {
    const part = cost(action).shared;
    if (part) use(part, seconds, 0);
  }

  const peak = peaks.reduce((a, b) => (b.commands > a.commands ? b : a));
  const largestRecord = recordOf(drop, sold);
  return {
    drop,
    times,
    isolateSeconds,
    cadence,
    usage,
    bill: billOf(usage),
    peak: { commandsPerSec: peak.commands, when: peak.when, limit: UPSTASH_LIMITS.commandsPerSec },
    largestRecord,
    fits: peak.commands <= UPSTASH_LIMITS.commandsPerSec && largestRecord.bytes <= largestRecord.limit,
  };
}

/** A shared action's own counts: its Upstash part is in its share per isolate and second. */
function withoutUpstash(c: Counts): Counts {
  return { ...c, subrequests: 0, upstashRequests: 0, upstashCommands: 0, upstashRequestBytes: 0, upstashResponseBytes: 0 };
}

/**
 * The largest record the drop writes: the busiest per-buyer key of one bucket of the sale as
 * it is split (src/shared/keys.ts, bucketsFor: a queued sale or a draw for a million joiners
 * or entrants at least, others for their stock), at the split's own bound per entry
 * (MAX_BYTES_PER_BUYER_RECORD).
 */
function recordOf(drop: Drop, sold: number): PricedDrop["largestRecord"] {
  const limit = Number(workerConfig().vars.REDIS_MAX_RECORD_BYTES);
  const queued = drop.mode === "fifo" || drop.mode === "random";
  const buckets = bucketsFor(drop.stock, limit, queued || drop.mode === "draw");
  const [what, entries] = queued
    ? ["the line's places (one bucket)", drop.buyers]
    : drop.mode === "draw"
      ? ["the draw's entries (one bucket)", drop.buyers]
      : ["the buyers (one bucket)", sold];
  const perBucket = Math.ceil(entries / buckets);
  return { what, entries: perBucket, bytes: perBucket * MAX_BYTES_PER_BUYER_RECORD, limit };
}

export function billOf(u: Usage): Bill {
  const lines = {
    workersRequests: (u.workerRequests / 1e6) * PRICES.workersPerMillionRequests,
    workersCpu: (u.workerCpuMs / 1e6) * PRICES.workersPerMillionCpuMs,
    upstashCommands: (u.upstashCommands / 1e6) * PRICES.upstashPerMillionCommands,
    queues: ((u.queueMessages * PRICES.queueOperationsPerMessage) / 1e6) * PRICES.queuesPerMillionOperations,
    d1RowsRead: (u.d1RowsRead / 1e6) * PRICES.d1PerMillionRowsRead,
    d1RowsWritten: (u.d1RowsWritten / 1e6) * PRICES.d1PerMillionRowsWritten,
  };
  return { ...lines, total: Object.values(lines).reduce((a, b) => a + b, 0) };
}

/**
 * The same open drop with the design card's checkout: every attempt one rate-limit call and
 * one EVAL (no memo: a refused attempt costs the same), every order one queue message, its
 * consumer's share of a batch (wrangler.toml's batch size) and this project's settlement
 * writes for it in D1; the waiting, the pay and the events as the open drop's.
 */
export async function priceDesignCard(drop: Drop, actions: readonly ActionCost[]): Promise<PricedDrop> {
  const open = await priceDrop({ ...drop, mode: "open" }, actions);
  const card = actions.find((a) => a.action === "design-card")?.counts;
  const settlement = actions.find((a) => a.action === "settlement")?.counts;
  const ours = actions.find((a) => a.action === "checkout-500")?.counts;
  const refusal = actions.find((a) => a.action === "warm-refusal");
  if (!card || !settlement || !ours || !refusal) throw new Error("no count for the design card: measure the actions again");
  const sold = Math.min(drop.buyers, drop.stock);
  const batch = workerConfig().queueConsumers.find((c) => c.queue === "flash-sale-orders")?.max_batch_size ?? 1;
  const usage = { ...open.usage };
  // Out: this project's checkouts and refusals. In: the card's attempts and one message per order.
  const take = (c: Counts, n: number, sign: 1 | -1, cpuMs: number) => {
    usage.workerRequests += sign * c.workerRequests * n;
    usage.workerCpuMs += sign * c.workerRequests * n * cpuMs;
    usage.upstashCommands += sign * c.upstashCommands * n;
    usage.upstashBytes += sign * (c.upstashRequestBytes + c.upstashResponseBytes) * n;
    usage.queueMessages += sign * c.queueMessages * n;
    usage.d1RowsRead += sign * c.d1RowsRead * n;
    usage.d1RowsWritten += sign * c.d1RowsWritten * n;
  };
  take(ours, sold, -1, INPUTS.cpuMsPerCheckout);
  take(withoutUpstash(refusal.counts), drop.buyers - sold, -1, INPUTS.cpuMsPerLocalRefusal);
  if (refusal.shared) take(refusal.shared, open.isolateSeconds["warm-refusal"] ?? 0, -1, 0);
  take(card, drop.buyers, 1, INPUTS.cpuMsPerCheckout);
  usage.queueMessages += sold;
  usage.workerRequests += sold / batch;
  usage.d1RowsRead += settlement.d1RowsRead * sold;
  usage.d1RowsWritten += settlement.d1RowsWritten * sold;
  return {
    ...open,
    usage,
    bill: billOf(usage),
    peak: {
      commandsPerSec: drop.buyers * card.upstashCommands,
      when: "the start's first second (every attempt runs both calls)",
      limit: UPSTASH_LIMITS.commandsPerSec,
    },
    fits:
      drop.buyers * card.upstashCommands <= UPSTASH_LIMITS.commandsPerSec && open.largestRecord.bytes <= open.largestRecord.limit,
  };
}

export const describeDrop = (d: Drop) =>
  `${count(d.buyers)} buyers, ${count(d.stock)} units, ${d.mode}, ${d.minutes} min waiting`;

/**
 * How long a stream is assumed to last before its page opens another (an assumption: networks,
 * phones going to sleep and deploys drop long connections; EventSource reconnects by itself).
 */
export const STREAM_LASTS_SEC = 600;

export interface WaitingByPush {
  /** The waiting page's polls in the drop, and the Workers bill for them (requests and CPU). */
  polls: number;
  pollingUsd: number;
  /** The same waiting as one stream per buyer (STREAM_LASTS_SEC each), each poll an event on it. */
  connections: number;
  pushUsd: number;
  /** The stream's CPU per event over a poll's, as measured here (load/cost/push.ts). */
  cpuRatio: number;
}

/**
 * The drop's waiting priced by push instead of polling: every request the waiting page made
 * (the line's polls, the sale page's and the draw's reads) an event on one stream per buyer
 * instead, whose CPU per event is the poll's times what the lab's stream measured against polls.
 * Upstash is the same either way (the line's progress read once a second per isolate).
 */
export function waitingByPush(p: PricedDrop, push: PushFigures): WaitingByPush {
  const polls = (["poll", "sale-page", "draw-read"] as const).reduce((n, action) => n + (p.times[action] ?? 0), 0);
  const perAnswer = (f: PushFigures["polling"]) => f.workerdCpuMs / Math.max(1, f.answers);
  const cpuRatio = perAnswer(push.stream) / perAnswer(push.polling);
  const connections = p.drop.buyers * Math.max(1, Math.ceil((p.drop.minutes * 60) / STREAM_LASTS_SEC));
  const cpuMs = INPUTS.cpuMsPerLocalRefusal;
  return {
    polls,
    pollingUsd: billOf({ ...NO_USE, workerRequests: polls, workerCpuMs: polls * cpuMs }).total,
    connections,
    pushUsd: billOf({ ...NO_USE, workerRequests: connections, workerCpuMs: polls * cpuMs * cpuRatio }).total,
    cpuRatio,
  };
}
