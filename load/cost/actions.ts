// What each thing a buyer (or the platform, for them) does costs in what the platforms bill,
// counted on the local stack: Worker requests (every invocation: a request, a queue batch, a
// cron run) and subrequests, Upstash requests, commands and body bytes (counted at the
// gateway; commands by name from the Worker's side, scripts named by their file), Queue
// messages sent and delivered, D1 statements and rows read and written (D1's own meta). Each
// action runs against the real Worker with production's limits on, and is counted from a quiet
// stack until everything it set off has finished (load/cost/counting.ts). Nothing here is a
// constant of the design: run on other code, it counts that code.
import type { ApiClient } from "../../dev/lib/api-client.ts";
import { eventually } from "../../dev/lib/wait.ts";
import type { Stack } from "../../dev/stack/local-stack.ts";
import type { AdminSaleView } from "../../src/shared/api-types.ts";
import { drive, type Shot } from "../runner/crowd.ts";
import { emptyTally, readMeter } from "../runner/meter.ts";
import { type Counting, counting, eventReceiver, inWaves, SETTLE_BOUND_MS } from "./counting.ts";
import {
  atLeastZero,
  type Counts,
  minus,
  per,
  times,
  upstashFields,
  upstashPart,
  withoutUpstashOf,
  zeroCounts,
} from "./counts.ts";
import { measurePush, type PushFigures } from "./push.ts";

export { countingVars } from "./counting.ts";
export type { Counts } from "./counts.ts";

export const ACTIONS = [
  "join",
  "poll",
  "join-random",
  "placement",
  "poll-admitted",
  "checkout-pass",
  "draw-entry",
  "draw-read",
  "draw-run-entry",
  "draw-run-winner",
  "checkout-50",
  "settlement",
  "checkout-500",
  "warm-refusal",
  "pay",
  "cancel",
  "expiry",
  "expiry-job-paid",
  "sale-page",
  "catalog-read",
  "design-card",
  "order-event",
] as const;
export type ActionName = (typeof ACTIONS)[number];

export interface ActionCost {
  action: ActionName;
  /** What the action is, as the tables name it. */
  label: string;
  /** The unit its counts are per. */
  per: string;
  /** How many units were measured. */
  units: number;
  counts: Counts;
  /**
   * What the action shares with every other of its kind an isolate serves in the same second
   * (a cached read, the refusals' counters): its Upstash part per isolate and second. The model
   * multiplies it by the isolates busy with the action and the seconds they are.
   */
  shared?: Counts;
  note?: string;
}

/** Every action's cost. */
export interface ActionCosts {
  actions: ActionCost[];
  /** Waiting in line by the lab's push channel against polling (load/cost/push.ts), unless only some actions were asked for. */
  push?: PushFigures;
  /** The gateway's and the Worker's own count of Upstash commands over every action: equal, or the meter missed some. */
  crossCheck: { gatewayCommands: number; meterCommands: number };
}

export interface ActionOptions {
  /** Buyers in each merged-checkout crowd (all accepted), at each number in flight. */
  crowd?: number;
  inFlight?: readonly [number, number];
  /** Polls of the waiting page measured. */
  polls?: number;
  /** Joins and entries measured. */
  joins?: number;
  /** How long the meter must read the same before an action counts as finished (ms): load/cost/counting.ts's by default. */
  quietMs?: number;
  /** How long waiting by push and by polling each run (s): load/cost/push.ts's by default. */
  pushSec?: number;
  /** Only these actions (and what they need measured first, not counted): all by default. */
  only?: readonly ActionName[];
  progress?: (label: string) => void;
}

type Sizes = Required<Omit<ActionOptions, "only" | "progress" | "quietMs" | "pushSec">>;

/** A group of actions measured together on sales of their own. */
interface Step {
  label: string;
  actions: readonly ActionName[];
  run(c: Counting, sizes: Sizes): Promise<ActionCost[]>;
}

const cost = (action: ActionName, label: string, unit: string, units: number, total: Counts, note?: string): ActionCost => ({
  action,
  label,
  per: unit,
  units,
  counts: per(total, units),
  ...(note && { note }),
});

const PROGRESS_SCRIPT = "EVALSHA waiting-room-progress";
const SHARED_PROGRESS = "its progress read, shared by the isolate's second, is apart";

/**
 * Splits off the line's progress reads (one script call per isolate and second, shared by
 * whoever polls or joins then): the action's own counts, and one read's. The Upstash bytes
 * go with the commands, in proportion.
 */
function withoutProgressReads(c: Counts): { own: Counts; reads: number; read: Counts } {
  const reads = c.commands[PROGRESS_SCRIPT] ?? 0;
  const share = c.upstashCommands === 0 ? 0 : reads / c.upstashCommands;
  const read: Counts = {
    ...zeroCounts(),
    subrequests: reads,
    upstashRequests: reads,
    upstashCommands: reads,
    upstashRequestBytes: c.upstashRequestBytes * share,
    upstashResponseBytes: c.upstashResponseBytes * share,
    commands: reads > 0 ? { [PROGRESS_SCRIPT]: reads } : {},
  };
  return { own: minus(c, read), reads, read: reads > 0 ? per(read, reads) : read };
}

const later = (ms: number) => new Date(Date.now() + ms).toISOString();
const HOUR = 3_600_000;
const future = () => ({ startsAt: later(HOUR), endsAt: later(2 * HOUR) });
const line = (mode: "fifo" | "random") => ({ mode, prequeueSec: 86_400 });
/** Buyers placed, let in and buying with a pass. */
const FEW = 10;
/** Refusals in one burst; pays, cancels and expiries; page reads at the faster pace. */
const WARM_BURST = 20;
const LIFECYCLE_ORDERS = 5;
const PAGE_READS = 200;
/** The units each draw sells. */
const DRAW_STOCK = 5;

/** Joins `shots` to a sale's line one at a time; their tickets. */
async function joinAll(c: Counting, saleId: string, shots: Shot[]): Promise<{ shot: Shot; ticket: string }[]> {
  const tickets: { shot: Shot; ticket: string }[] = [];
  for (const shot of shots) {
    const answer = await c.api.joinWaitingRoom(saleId, shot.token);
    c.expect(`a join answered ${answer.status} ${answer.code}`, answer.status === 200 && answer.body !== undefined);
    tickets.push({ shot, ticket: answer.body?.ticket as string });
  }
  return tickets;
}

/** Sales with a line, their running totals written by a first join each (once a sale: not counted). */
async function lineSales(c: Counting, ...inputs: Parameters<Counting["createSales"]>): Promise<AdminSaleView[]> {
  const sales = await c.createSales(...inputs);
  for (const sale of sales) await joinAll(c, sale.id, await c.users(`first-${sale.id}`, 1));
  return sales;
}

/** `n` orders on a sale, accepted and settled (not counted). */
async function orders(c: Counting, saleId: string, prefix: string, n: number) {
  const shots = await c.users(prefix, n);
  const placed = await Promise.all(shots.map((shot) => c.api.checkout(saleId, shot.token)));
  c.expect(
    "every order accepted",
    placed.every((p) => p.status === 202),
  );
  await eventually("their settlement", c.settled(saleId), SETTLE_BOUND_MS);
  return shots.map((shot, i) => ({ shot, orderId: placed[i]?.orderId as string }));
}

async function pay(c: Counting, o: { shot: Shot; orderId: string }): Promise<void> {
  const paid = await c.api.pay(o.orderId, o.shot.token, "tok_visa", `pay-${o.orderId}`);
  c.expect(`a pay answered ${paid.status} ${paid.code}`, paid.status === 200);
}

/** The expiry of LIFECYCLE_ORDERS orders on a sale of their own: counted from their settlement until every one expired. */
async function expiryOf(c: Counting, name: string): Promise<Counts> {
  const [expiring] = (await c.createSales({ name, stock: 100, paymentWindowSec: 8 })) as [AdminSaleView];
  await orders(c, expiring.id, `expiring-${expiring.id}`, LIFECYCLE_ORDERS);
  const statuses = () => c.rows<{ status: string }>("SELECT status FROM orders WHERE sale_id = ?", Number(expiring.id));
  return c.counted(
    await c.measure(async () => {}, {
      until: async () => (await statuses()).every((r: { status: string }) => r.status === "expired"),
    }),
  );
}

const EXPIRY_LABEL = "an expiry (the job at the window's close, the unit back)";

/**
 * An expiry counted once `held` more orders await payment on a sale of their own (accepted
 * and settled first, not counted): what an expiry reads must not grow with the orders held.
 */
export async function measureExpiryBeside(stack: Stack, held: number): Promise<ActionCost> {
  const c = await counting(stack);
  try {
    const [holding] = (await c.createSales({ name: `cost: ${held} held`, stock: held, paymentWindowSec: 3_600 })) as [
      AdminSaleView,
    ];
    await orders(c, holding.id, "held", held);
    return cost("expiry", EXPIRY_LABEL, "order", LIFECYCLE_ORDERS, await expiryOf(c, "cost: expiring beside"));
  } finally {
    c.close();
  }
}

/**
 * GETs of `pathname` from one isolate, a wave a second, at two paces: the Upstash part that
 * grows with the reads is the read's own, the part that grows with the seconds (a cached
 * read, at most every half second per isolate) is its share per isolate and second.
 */
async function pageReads(c: Counting, action: ActionName, label: string, pathname: string): Promise<ActionCost> {
  await (await c.api.fetch(pathname)).arrayBuffer(); // warm
  const paced = async (reads: number) => {
    let seconds = 0;
    const total = c.counted(
      await c.measure(async () => {
        seconds = await inWaves(reads, async () => {
          const res = await c.api.fetch(pathname);
          await res.arrayBuffer();
          c.expect(`${pathname} answered ${res.status}`, res.status === 200);
        });
      }),
    );
    return { reads, seconds, total };
  };
  const slow = await paced(PAGE_READS / 4);
  const fast = await paced(PAGE_READS);
  const [x1, x2] = [slow.reads / slow.seconds, fast.reads / fast.seconds];
  const [y1, y2] = [slow.total.upstashCommands / slow.seconds, fast.total.upstashCommands / fast.seconds];
  const ownCommands = Math.max(0, (y2 - y1) / (x2 - x1));
  const sharedCommands = Math.max(0, y1 - ownCommands * x1);
  const perCommand = per(upstashPart(fast.total), fast.total.upstashCommands || 1);
  return {
    action,
    label,
    per: "read",
    units: fast.reads,
    counts: { ...per(withoutUpstashOf(fast.total), fast.reads), ...upstashFields(times(perCommand, ownCommands)) },
    shared: times(perCommand, sharedCommands),
    note: "its share: what Redis serves an isolate's reads from, per second, whoever reads",
  };
}

/** A draw open now whose entries close once `entries` have had time to enter, its sale starting then. */
function drawSale(api: ApiClient, name: string, entries: number) {
  const closesAt = Date.now() + 15_000 + entries * 250;
  return api.createSale({
    name,
    stock: DRAW_STOCK,
    startsAt: new Date(closesAt).toISOString(),
    endsAt: new Date(closesAt + HOUR).toISOString(),
    paymentWindowSec: 600,
    draw: { opensAt: new Date(Date.now() - 1_000).toISOString(), closesAt: new Date(closesAt).toISOString() },
  });
}

const STEPS: Step[] = [
  {
    label: "the waiting room: joins and polls",
    actions: ["join", "poll"],
    async run(c, { joins, polls }) {
      const [queued] = (await lineSales(c, { name: "cost: queued", stock: 10, ...future(), queue: line("fifo") })) as [
        AdminSaleView,
      ];
      let tickets: { shot: Shot; ticket: string }[] = [];
      const joined = await c.measure(async () => {
        tickets = await joinAll(c, queued.id, await c.users("joiner", joins));
      });
      // Polls from one isolate, a wave a second, as a crowd's pages come.
      let seconds = 0;
      const polled = await c.measure(async () => {
        seconds = await inWaves(polls, async (i) => {
          const { shot, ticket } = tickets[i % tickets.length] as (typeof tickets)[number];
          const answer = await c.api.pollQueue(queued.id, shot.token, ticket);
          c.expect(`a poll answered ${answer.status} ${answer.code}`, answer.status === 200 && answer.body?.state === "waiting");
        });
      });
      const poll = withoutProgressReads(c.counted(polled));
      return [
        cost("join", "a queue join (fifo)", "join", joins, withoutProgressReads(c.counted(joined)).own, SHARED_PROGRESS),
        {
          ...cost("poll", "a waiting page poll", "poll", polls, poll.own),
          shared: per(poll.read, seconds / Math.max(1, poll.reads)),
          note: "its share: the line's progress read, once a second per isolate polled",
        },
      ];
    },
  },
  {
    label: "the waiting room: a random sale's joins and places, passes",
    actions: ["join-random", "placement", "poll-admitted", "checkout-pass"],
    async run(c, { joins }) {
      const [random, placing, admitting] = (await lineSales(
        c,
        { name: "cost: random", stock: 10, ...future(), queue: line("random") },
        { name: "cost: random, starting", stock: 10, ...future(), queue: line("random") },
        { name: "cost: queued, started", stock: 100, paymentWindowSec: 600, queue: line("fifo") },
      )) as [AdminSaleView, AdminSaleView, AdminSaleView];
      const randomJoined = await c.measure(async () => {
        await joinAll(c, random.id, await c.users("random-joiner", joins));
      });

      // A random sale's pre-queue ticket is placed by its first poll near the front after the start.
      const drawn = await joinAll(c, placing.id, await c.users("placed", FEW));
      const startsAt = Date.now() + 1_500;
      const edit = await c.api.editSale(placing.id, { startsAt: new Date(startsAt).toISOString() });
      c.expect(`the start moved: ${edit.status} ${edit.code}`, edit.status === 200);
      await eventually("the sale to start", async () => Date.now() > startsAt + 300, 10_000);
      const placed = await c.measure(async () => {
        for (const { shot, ticket } of drawn) {
          const answer = await c.api.pollQueue(placing.id, shot.token, ticket);
          c.expect(`a first poll answered ${answer.status} ${answer.code}`, answer.status === 200 && answer.body?.place !== null);
        }
      });

      // A started fifo sale lets its places in at once: each buyer's poll finds a pass, and buys with it.
      const admitted = await joinAll(c, admitting.id, await c.users("admitted", FEW));
      await eventually(
        "the places to be let in",
        async () => ((await c.api.queueStats(admitting.id)).admitted ?? 0) >= FEW + 1,
        SETTLE_BOUND_MS,
      );
      const passes: string[] = [];
      const passPolls = await c.measure(async () => {
        for (const { shot, ticket } of admitted) {
          const answer = await c.api.pollQueue(admitting.id, shot.token, ticket);
          c.expect(`an admitted poll answered ${answer.body?.state}`, answer.body?.state === "admitted" && !!answer.body.pass);
          passes.push(answer.body?.pass as string);
        }
      });
      const bought = await c.measure(
        async () => {
          const answers = await Promise.all(
            admitted.map(({ shot }, i) => c.api.checkoutWithPass(admitting.id, shot.token, passes[i])),
          );
          c.expect(
            "every pass bought",
            answers.every((a) => a.status === 202),
          );
        },
        { until: c.settled(admitting.id) },
      );
      return [
        cost("join-random", "a queue join (random, pre-queue)", "join", joins, withoutProgressReads(c.counted(randomJoined)).own),
        cost(
          "placement",
          "a random sale's first poll near the front (its place looked up)",
          "poll",
          FEW,
          withoutProgressReads(c.counted(placed)).own,
        ),
        cost(
          "poll-admitted",
          "a waiting page poll that finds its pass",
          "poll",
          FEW,
          withoutProgressReads(c.counted(passPolls)).own,
        ),
        cost("checkout-pass", "an accepted checkout with a pass (settlement included)", "accepted order", FEW, c.counted(bought)),
      ];
    },
  },
  {
    label: "draws: entries, reads, the run and its offers",
    actions: ["draw-entry", "draw-read", "draw-run-entry", "draw-run-winner"],
    async run(c, { joins }) {
      const window = future(); // once: entries close as the sale starts, to the millisecond
      const [draw] = (await c.createSales({
        name: "cost: draw",
        stock: 10,
        ...window,
        paymentWindowSec: 600,
        draw: { opensAt: later(-1_000), closesAt: window.startsAt },
      })) as [AdminSaleView];
      await c.api.enterDraw(draw.id, (await c.users("first-entrant", 1))[0]?.token as string);
      const entered = await c.measure(async () => {
        for (const shot of await c.users("entrant", joins)) {
          const answer = await c.api.enterDraw(draw.id, shot.token);
          c.expect(`an entry answered ${answer.status} ${answer.code}`, answer.status === 201);
        }
      });
      const read = await pageReads(c, "draw-read", "a draw page read (warm)", `/api/sales/${draw.id}/draw`);

      // Draws of one stock and two entry counts, after one that warms the run's scripts: the
      // run's cost per entry is their difference, its cost per winner what is left. All three
      // take their entries first (not counted), so their entry windows run at once; each run
      // is then counted on its own.
      const enteredDraw = async (entries: number) => {
        const sale = await drawSale(c.api, `cost: a draw of ${entries} entries`, entries);
        const entrants = await c.users(`drawn-${sale.id}`, entries);
        for (let i = 0; i < entrants.length; i += 10) {
          const answers = await Promise.all(entrants.slice(i, i + 10).map((shot) => c.api.enterDraw(sale.id, shot.token)));
          for (const a of answers) c.expect(`an entry answered ${a.status} ${a.code}`, a.status === 201);
        }
        return sale;
      };
      const runDraw = async (sale: AdminSaleView) => {
        await eventually(
          "the entries to close",
          async () => Date.now() > Date.parse(sale.draw?.closesAt as string) + 200,
          60_000,
        );
        const offered = async () =>
          (await c.rows<{ n: number }>("SELECT COUNT(*) AS n FROM orders WHERE sale_id = ?", Number(sale.id)))[0]?.n ===
            DRAW_STOCK && (await c.settled(sale.id)());
        return c.counted(
          await c.measure(
            async () => {
              const run = await c.api.runDraw(sale.id);
              c.expect(`the draw answered ${run.status} ${run.code}`, run.status === 202);
            },
            { until: async () => (await c.api.draw(sale.id)).body?.state === "drawn" && (await offered()) },
          ),
        );
      };
      // The draws' entries: few, and three times as many.
      const sizes = [Math.max(DRAW_STOCK, joins / 2), Math.max(DRAW_STOCK, joins / 2) * 3] as const;
      const [warming, fewer, most] = await Promise.all([DRAW_STOCK, ...sizes].map(enteredDraw));
      await runDraw(warming as AdminSaleView);
      const few = await runDraw(fewer as AdminSaleView);
      const more = await runDraw(most as AdminSaleView);
      const perEntry = atLeastZero(per(minus(more, few), sizes[1] - sizes[0]));
      return [
        cost("draw-entry", "a draw entry", "entry", joins, c.counted(entered)),
        read,
        cost(
          "draw-run-entry",
          "the draw run, per entry",
          "entry",
          1,
          perEntry,
          `the difference between draws of ${sizes[0]} and ${sizes[1]} entries`,
        ),
        cost(
          "draw-run-winner",
          "the draw run, per winner (the run's own work and its offers: an order each, settled)",
          "winner",
          DRAW_STOCK,
          atLeastZero(minus(few, times(perEntry, sizes[0]))),
          "what is left of the smaller draw (D1's reads grow faster than the entries: a share below zero is kept at zero)",
        ),
      ];
    },
  },
  {
    label: "merged checkouts and their settlement",
    actions: ["checkout-50", "settlement", "checkout-500"],
    async run(c, { crowd, inFlight }) {
      const costs: ActionCost[] = [];
      for (const [i, n] of inFlight.entries()) {
        const [sale] = (await c.createSales({ name: `cost: crowd ${n}`, stock: crowd, paymentWindowSec: 600 })) as [
          AdminSaleView,
        ];
        const buyers = await c.users(`crowd-${n}`, crowd);
        const checkedOut = await c.measure(
          async () => {
            const { samples } = await drive(buyers, (shot) => c.api.checkout(sale.id, shot.token), { concurrency: n });
            const refused = samples.filter((s) => s.status !== 202);
            c.expect(`${refused.length} checkouts of the crowd were not accepted: ${refused[0]?.code}`, refused.length === 0);
          },
          { until: c.settled(sale.id) },
        );
        const label = `an accepted checkout, merged, ${n} in flight (settlement included)`;
        costs.push(cost(i === 0 ? "checkout-50" : "checkout-500", label, "accepted order", crowd, c.counted(checkedOut)));
        if (i === 0) {
          const settlement = c.countsOf(checkedOut.byKind["queue:flash-sale-orders"] ?? emptyTally());
          costs.push(cost("settlement", "a settlement (the orders queue's consumer)", "order", crowd, settlement));
        }
      }
      return costs;
    },
  },
  {
    label: "warm refusals",
    actions: ["warm-refusal"],
    async run(c) {
      const [sold] = (await c.createSales({ name: "cost: sold out", stock: 1 })) as [AdminSaleView];
      await orders(c, sold.id, "sold", 1);
      const refused = await c.users("refused", WARM_BURST + 1);
      // The first refusal teaches the isolate the sale sold out (its script call not counted);
      // the burst comes well inside the second the isolate keeps that.
      const teach = async () => {
        const first = await c.api.checkout(sold.id, refused[0]?.token as string);
        c.expect(`the first refusal answered ${first.code}`, first.code === "SOLD_OUT");
      };
      const burst = c.counted(
        await c.measure(
          async () => {
            const answers = await Promise.all(refused.slice(1).map((shot) => c.api.checkout(sold.id, shot.token)));
            c.expect(
              "every refusal sold out",
              answers.every((a) => a.code === "SOLD_OUT"),
            );
          },
          { before: teach },
        ),
      );
      return [
        {
          ...cost("warm-refusal", "a warm refusal (sold out)", "attempt", WARM_BURST, burst),
          shared: upstashPart(burst),
          note: `of ${WARM_BURST} at once; its share: the console's counters, written once a second per isolate refusing`,
        },
      ];
    },
  },
  {
    label: "an order's life: pay, cancel, expiry",
    actions: ["pay", "cancel", "expiry"],
    async run(c) {
      const [paying] = (await c.createSales({ name: "cost: paying", stock: 100, paymentWindowSec: 600 })) as [AdminSaleView];
      const payable = await orders(c, paying.id, "payer", 2 * LIFECYCLE_ORDERS);
      const paid = await c.measure(async () => {
        for (const o of payable.slice(0, LIFECYCLE_ORDERS)) await pay(c, o);
      });
      const cancelled = await c.measure(async () => {
        for (const o of payable.slice(LIFECYCLE_ORDERS)) {
          const answer = await c.api.cancel(o.orderId, o.shot.token);
          c.expect(`a cancel answered ${answer.status} ${answer.code}`, answer.status === 200);
        }
      });
      const expired = await expiryOf(c, "cost: expiring");
      return [
        cost("pay", "a pay", "order", LIFECYCLE_ORDERS, c.counted(paid)),
        cost("cancel", "a cancel", "order", LIFECYCLE_ORDERS, c.counted(cancelled)),
        cost("expiry", EXPIRY_LABEL, "order", LIFECYCLE_ORDERS, expired),
      ];
    },
  },
  {
    // A step of its own: it waits out a payment window, which a count of the others need not.
    label: "an order's life: the expiry job of a paid order",
    actions: ["expiry-job-paid"],
    async run(c) {
      const [paidLater] = (await c.createSales({ name: "cost: paid before expiry", stock: 100, paymentWindowSec: 12 })) as [
        AdminSaleView,
      ];
      for (const o of await orders(c, paidLater.id, "paid-later", LIFECYCLE_ORDERS)) await pay(c, o);
      const jobRuns = async () => (await readMeter(c.stack)).byKind["queue:flash-sale-jobs"]?.invocations ?? 0;
      const paidJob = await c.measure(async () => {}, { until: async () => (await jobRuns()) > 0 });
      return [cost("expiry-job-paid", "the expiry job of a paid order", "order", LIFECYCLE_ORDERS, c.counted(paidJob))];
    },
  },
  {
    label: "page reads",
    actions: ["sale-page", "catalog-read"],
    async run(c) {
      const [page] = (await c.createSales({ name: "cost: page", stock: 10 })) as [AdminSaleView];
      return [
        await pageReads(c, "sale-page", "a sale page read (warm)", `/api/sales/${page.id}`),
        await pageReads(c, "catalog-read", "a catalog read (warm)", "/api/sales"),
      ];
    },
  },
  {
    label: "the design card (the lab)",
    actions: ["design-card"],
    async run(c, { crowd, inFlight }) {
      const labSale = await c.api.createLabSale(crowd);
      const buyers = await c.users("card", crowd);
      const card = await c.measure(async () => {
        const { samples } = await drive(buyers, (shot) => c.api.labCheckout("design-card", labSale, shot.token), {
          concurrency: inFlight[0],
        });
        c.expect(
          "every design-card checkout accepted",
          samples.every((s) => s.status === 202),
        );
      });
      const label = "the design card's checkout (one rate-limit call, one EVAL; its queue message and D1 insert not run)";
      return [cost("design-card", label, "accepted order", crowd, c.counted(card))];
    },
  },
  {
    // Last: an endpoint for order events changes what every order change costs after it.
    label: "an order event delivered",
    actions: ["order-event"],
    async run(c) {
      const [paying] = (await c.createSales({ name: "cost: paying, events", stock: 100, paymentWindowSec: 600 })) as [
        AdminSaleView,
      ];
      const payAll = (list: { shot: Shot; orderId: string }[]) => async () => {
        for (const o of list) await pay(c, o);
      };
      const alone = c.counted(await c.measure(payAll(await orders(c, paying.id, "payer-alone", LIFECYCLE_ORDERS))));
      const receiver = await eventReceiver();
      try {
        await c.api.addEndpoint(receiver.url, ["order.paid"]);
        const withEvents = c.counted(
          await c.measure(payAll(await orders(c, paying.id, "payer-events", LIFECYCLE_ORDERS)), {
            until: async () => receiver.received() >= LIFECYCLE_ORDERS,
          }),
        );
        const label = "an order event delivered (order.paid to one endpoint)";
        const note = "pays with an endpoint, less as many pays without one";
        return [cost("order-event", label, "event", receiver.received(), minus(withEvents, alone), note)];
      } finally {
        await receiver.close();
      }
    },
  },
];

/** Measures the actions on `stack`, started with countingVars() and the meter (load/runner/meter.ts). */
export async function measureActions(stack: Stack, options: ActionOptions = {}): Promise<ActionCosts> {
  const sizes: Sizes = { crowd: 1_000, inFlight: [50, 500], polls: 300, joins: 40 };
  for (const [k, v] of Object.entries(options)) if (k in sizes && v !== undefined) Object.assign(sizes, { [k]: v });
  const c = await counting(stack, options.quietMs);
  try {
    const actions: ActionCost[] = [];
    for (const step of STEPS) {
      if (options.only && !step.actions.some((a) => options.only?.includes(a))) continue;
      options.progress?.(`counting: ${step.label}`);
      actions.push(...(await step.run(c, sizes)));
    }
    if (options.only) return { actions: actions.filter((a) => options.only?.includes(a.action)), crossCheck: c.crossCheck() };
    options.progress?.("counting: waiting by push against polling");
    const push = await measurePush(c, options.pushSec);
    return { actions, push, crossCheck: c.crossCheck() };
  } finally {
    c.close();
  }
}
