// Orders after the 202 under a crowd, on the whole local stack: the Worker on Miniflare with
// local D1 and Queues (the jobs queue delivers each expiry when its window closes), a real
// redis-server behind the gateway, the dev payment provider. Nothing is faked.
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { orderIdCipher } from "../../dev/lib/order-ids.ts";
import { eventually } from "../../dev/lib/wait.ts";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";
import type { OrderView, ReconciliationReport } from "../../src/shared/api-types.ts";
import { ORDER_EVENT_TYPES } from "../../src/shared/order-events.ts";

let stack: Stack;

beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack?.stop();
});

interface D1Order {
  order_id: string;
  user_id: string;
  status: OrderView["status"];
  quantity: number;
  expires_at: number | null;
  closed_at: number | null;
  refund_due: number;
}

async function d1Orders(saleId: string): Promise<D1Order[]> {
  const results = await stack.worker.query<D1Order>(
    "SELECT order_id, user_id, status, quantity, expires_at, closed_at, refund_due FROM orders WHERE sale_id = ?",
    Number(saleId),
  );
  // By the ids the buyers were given (D1 keeps the internal ones).
  const ids = orderIdCipher(stack.secrets.ORDER_ID_KEY);
  return results.map((r: D1Order) => ({ ...r, order_id: ids.toPublic(r.order_id) }));
}

/**
 * Waits until D1 holds `count` orders of the sale and none of them is in `busy` states. The
 * queue is drained first (stack.drain: the outbox re-driven, a stalled local queue restarted).
 */
async function settled(saleId: string, count: number, busy: OrderView["status"][] = []): Promise<D1Order[]> {
  await stack.drain(saleId, 0);
  let rows: D1Order[] = [];
  await eventually(
    () => `${count} orders of sale ${saleId} settled (D1 has ${rows.length})`,
    async () => {
      rows = await d1Orders(saleId);
      return rows.length === count && rows.every((r) => !busy.includes(r.status));
    },
    30_000,
  );
  return rows;
}

const pay = async (orderId: string, user: string, key = `pay-${orderId}`) =>
  stack.api.pay(orderId, await stack.api.userToken(user), "tok_visa", key);

/**
 * Every charge of the sale accounted for: a paid order has exactly one succeeded attempt and
 * owes no refund; any other order has none, and owes a refund exactly when a charge landed on
 * it after it ended; no attempt is left charging. Answers how many orders owe a refund.
 */
type ChargesOfOrder = {
  order_id: string;
  status: string;
  refund_due: number;
  succeeded: number;
  refunded: number;
  charging: number;
};

async function chargesAccountedFor(saleId: string): Promise<number> {
  const results = await stack.worker.query<ChargesOfOrder>(
    `SELECT o.order_id, o.status, o.refund_due,
            COALESCE(SUM(p.status = 'succeeded'), 0) AS succeeded,
            COALESCE(SUM(p.status = 'refund_due'), 0) AS refunded,
            COALESCE(SUM(p.status = 'charging'), 0) AS charging
     FROM orders o LEFT JOIN payments p ON p.order_id = o.order_id
     WHERE o.sale_id = ? GROUP BY o.order_id`,
    Number(saleId),
  );
  let owed = 0;
  for (const r of results as ChargesOfOrder[]) {
    expect(r.charging, r.order_id).toBe(0);
    if (r.status === "paid") expect(r, r.order_id).toMatchObject({ succeeded: 1, refunded: 0, refund_due: 0 });
    else expect(r, r.order_id).toMatchObject({ succeeded: 0, refund_due: r.refunded > 0 ? 1 : 0 });
    owed += r.refund_due;
  }
  return owed;
}

/**
 * A report that reconciles, once the queue has drained and every return has happened (and,
 * with `awaitingPayment: 0`, every window has closed or been paid).
 */
async function reconciled(saleId: string, until: { awaitingPayment?: 0 } = {}): Promise<ReconciliationReport> {
  let last: ReconciliationReport | undefined;
  return eventually(
    () => `sale ${saleId} to reconcile: ${JSON.stringify(last)}`,
    async () => {
      await stack.worker.scheduled(); // the cron: re-drive, expire what is due, return what is not back
      last = await stack.api.report(saleId);
      const closed = until.awaitingPayment === undefined || last.d1.awaitingPayment === 0;
      return last.reconciled && last.pending === 0 && last.returnsPending === 0 && closed && last;
    },
    30_000,
  );
}

interface ReceivedEvent {
  id: string;
  type: string;
  orderId?: string;
}

/**
 * A shop's endpoint on this machine: an HTTP server verifying each event's signature with the
 * specification's library. It is written into D1 directly (the admin route refuses http and
 * loopback URLs outside npm start, and this stack's Host is not a loopback name).
 */
async function shopEndpoint(): Promise<{ received: ReceivedEvent[]; refused: number; id: string; close: () => Promise<void> }> {
  const secret = `whsec_${randomBytes(24).toString("base64")}`;
  const webhook = new Webhook(secret);
  const shop = { received: [] as ReceivedEvent[], refused: 0 };
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    try {
      const event = webhook.verify(Buffer.concat(chunks).toString("utf8"), req.headers as Record<string, string>) as {
        id: string;
        type: string;
        data: { order?: { orderId: string } };
      };
      shop.received.push({ id: req.headers["webhook-id"] as string, type: event.type, orderId: event.data.order?.orderId });
      res.writeHead(204).end();
    } catch {
      shop.refused++;
      res.writeHead(400).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const id = `ep_${randomBytes(12).toString("hex")}`;
  await stack.worker.query(
    "INSERT INTO event_endpoints (id, url, secret, events, created_at) VALUES (?, ?, ?, ?, ?)",
    id,
    `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    secret,
    JSON.stringify(ORDER_EVENT_TYPES),
    Date.now(),
  );
  return {
    ...shop,
    get refused() {
      return shop.refused;
    },
    id,
    close: async () => {
      await stack.api.updateEndpoint(id, { enabled: false });
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** The events each order must have raised, from its final row: one per state it went through, in some order. */
const expectedEvents = (row: D1Order) => [
  "order.reserved",
  "order.awaiting_payment",
  `order.${row.status}`,
  ...(row.refund_due === 1 ? ["order.refund_due"] : []),
];

describe("a crowd with a payment window", () => {
  it("sells returned units to later buyers, ends every order in one final state, never sells a unit twice", async () => {
    const STOCK = 100;
    const shop = await shopEndpoint();
    // A window long enough for the settlement and the payments to land on a busy machine (at
    // 3 s a busy run saw every window close before its buyer's payment arrived), short enough
    // for the walkers' units to come back while the test waits.
    const WINDOW_SEC = 10;
    const sale = await stack.api.createSale({ stock: STOCK, paymentWindowSec: WINDOW_SEC, name: "lifecycle crowd" });
    const users = Array.from({ length: 400 }, (_, i) => `life-${sale.id}-${i}`);
    const tokens = new Map(await Promise.all(users.map(async (u) => [u, await stack.api.userToken(u)] as const)));

    // Wave 1: 400 buyers at once for 100 units.
    const wave1 = await Promise.all(
      users.map(async (u) => ({ user: u, ...(await stack.api.checkout(sale.id, tokens.get(u) as string)) })),
    );
    const winners = wave1.filter((a) => a.status === 202);
    expect(winners).toHaveLength(STOCK);
    for (const a of wave1.filter((x) => x.status !== 202)) expect(a.code).toBe("SOLD_OUT");
    const deadlines = new Map<string, number>();
    const settle = async (count: number) => {
      for (const row of await settled(sale.id, count, ["pending"])) deadlines.set(row.order_id, row.expires_at as number);
    };
    await settle(STOCK);

    // Half pay, a fifth cancel, the rest walk away. Those with the most time left pay or
    // cancel: on a busy machine reaching the last of them may take longer than some windows.
    const timeLeft = (w: Winner) => deadlines.get(w.orderId as string) as number;
    const byTimeLeft = [...winners].sort((a, b) => timeLeft(b) - timeLeft(a));
    const [paying, cancelling] = await Promise.all([
      answersOf(byTimeLeft.slice(0, 50), (w) => pay(w.orderId as string, w.user)),
      answersOf(byTimeLeft.slice(50, 70), (w) => stack.api.cancel(w.orderId as string, tokens.get(w.user) as string)),
    ]);
    const paid = inTime(paying, "paid", "ORDER_NOT_PAYABLE", deadlines);
    const cancelled = inTime(cancelling, "cancelled", "ORDER_NOT_CANCELLABLE", deadlines);
    const walkers = winners.filter((w) => !paid.includes(w) && !cancelled.includes(w));

    // The cancelled units are back at once; the walkers' come back when their window closes
    // (on a slow machine some may have closed already).
    const backAtOnce = (await stack.api.report(sale.id)).redis.remaining;
    expect(backAtOnce).toBeGreaterThanOrEqual(cancelled.length);
    expect(backAtOnce).toBeLessThanOrEqual(cancelled.length + walkers.length);
    await eventually(
      "the walkers' orders to expire and their units to come back",
      async () => (await stack.api.report(sale.id)).redis.remaining === cancelled.length + walkers.length,
      WINDOW_SEC * 1_000 + 20_000,
    );

    // Wave 2: the 300 who lost try again, and buy exactly the returned units; they pay.
    const losers = users.filter((u) => !winners.some((w) => w.user === u));
    const wave2 = await Promise.all(
      losers.map(async (u) => ({ user: u, ...(await stack.api.checkout(sale.id, tokens.get(u) as string)) })),
    );
    const later = wave2.filter((a) => a.status === 202);
    expect(later).toHaveLength(cancelled.length + walkers.length);
    await settle(STOCK + later.length);
    const laterPaid = inTime(
      await answersOf(later, (w) => pay(w.orderId as string, w.user)),
      "paid",
      "ORDER_NOT_PAYABLE",
      deadlines,
    );
    const lapsed = later.length - laterPaid.length;
    expect(paid.length + laterPaid.length, "nobody paid within the window: the test did not run").toBeGreaterThan(0);
    expect(cancelled.length, "no cancel landed within the window: the test did not run").toBeGreaterThan(0);

    // Every order in exactly one final state (the orders whose window closed while their
    // buyer paid expired as well); paid units never exceed the stock; each buyer once.
    const report = await reconciled(sale.id, { awaitingPayment: 0 });
    const rows = await d1Orders(sale.id);
    const byStatus = (s: OrderView["status"]) => rows.filter((r) => r.status === s);
    const ids = (ws: Winner[]) => ws.map((w) => w.orderId).sort();
    expect(rows).toHaveLength(STOCK + later.length);
    expect(
      byStatus("paid")
        .map((r) => r.order_id)
        .sort(),
    ).toEqual(ids([...paid, ...laterPaid]));
    expect(
      byStatus("cancelled")
        .map((r) => r.order_id)
        .sort(),
    ).toEqual(ids(cancelled));
    expect(byStatus("expired")).toHaveLength(walkers.length + lapsed);
    expect(byStatus("awaiting_payment")).toHaveLength(0);
    expect(byStatus("paid").reduce((n, r) => n + r.quantity, 0)).toBeLessThanOrEqual(STOCK);
    expect(new Set(byStatus("paid").map((r) => r.user_id)).size).toBe(byStatus("paid").length);
    const promised = new Map([...winners, ...later].map((w) => [w.orderId, w.user]));
    for (const row of rows) expect(promised.get(row.order_id), row.order_id).toBe(row.user_id);

    const sold = paid.length + laterPaid.length;
    expect(report.oversold).toBe(0);
    expect(report.redis.remaining).toBe(lapsed);
    expect(report.redis.returned).toBe(cancelled.length + walkers.length + lapsed);
    expect(report.d1.returnedUnits).toBe(cancelled.length + walkers.length + lapsed); // one unit each
    expect(report.states.paid).toEqual({ orders: sold, units: sold });
    expect(report.d1.soldCounter).toBe(sold);
    expect(report.refundsDue).toBe(await chargesAccountedFor(sale.id));

    // The shop heard of every state change once (by webhook-id), signed, in order per order,
    // and of nothing that was refused (a pay or cancel answered 409 raised no event).
    const eventsOf = () => {
      const seen = new Set<string>();
      const byOrder = new Map<string, string[]>();
      for (const e of shop.received) {
        if (!e.orderId || seen.has(e.id)) continue;
        seen.add(e.id);
        byOrder.set(e.orderId, [...(byOrder.get(e.orderId) ?? []), e.type]);
      }
      return byOrder;
    };
    const expected = new Map(rows.map((r) => [r.order_id, expectedEvents(r)]));
    await eventually(
      () =>
        `the shop to hear every order's events (${[...eventsOf().values()].flat().length} of ${[...expected.values()].flat().length})`,
      async () => [...expected].every(([id, types]) => eventsOf().get(id)?.length === types.length),
      60_000,
    );
    await shop.close();
    const heard = eventsOf();
    // In the order D1 recorded them (a charge that lost the race to the deadline may mark the
    // refund before the expiry lands), and exactly the states the order went through.
    const recorded = await stack.worker.query<{ subject: string; type: string }>(
      "SELECT subject, type FROM order_events WHERE sale_id = ? ORDER BY seq",
      Number(sale.id),
    );
    // D1's subjects are internal ids; the shop heard of public ones.
    const cipher = orderIdCipher(stack.secrets.ORDER_ID_KEY);
    for (const [orderId, types] of expected) {
      const inD1 = recorded
        .filter((e: { subject: string }) => !e.subject.startsWith("sale:") && cipher.toPublic(e.subject) === orderId)
        .map((e: { type: string }) => e.type);
      expect(heard.get(orderId), orderId).toEqual(inD1);
      expect([...inD1].sort(), orderId).toEqual([...types].sort());
    }
    expect(shop.refused).toBe(0);
  });
});

type Winner = { user: string; orderId?: string };

/** Each buyer's answer to `act`, and when it came. */
function answersOf<T>(buyers: Winner[], act: (w: Winner) => Promise<T>) {
  return Promise.all(buyers.map(async (w) => ({ w, answer: await act(w), answeredAt: Date.now() })));
}

/**
 * The buyers whose payment or cancel did what it asked. Any other answer must be the 409 of
 * an order whose window had closed by then (it expired first, as a busy machine allows).
 */
function inTime(
  answers: { w: Winner; answer: { status: number; code?: string; body?: unknown }; answeredAt: number }[],
  status: "paid" | "cancelled",
  refusal: string,
  deadlines: Map<string, number>,
): Winner[] {
  const done: Winner[] = [];
  for (const { w, answer, answeredAt } of answers) {
    if (answer.status === 200) {
      expect(answer.body).toMatchObject({ status });
      done.push(w);
      continue;
    }
    expect(answer, w.orderId).toMatchObject({ status: 409, code: refusal });
    expect(answeredAt, `${w.orderId} was refused before its window closed`).toBeGreaterThanOrEqual(
      deadlines.get(w.orderId as string) as number,
    );
  }
  return done;
}

/** One every PACE_MS: 33 checkouts or payments a second, well within what the stack answers. */
const PACE_MS = 30;
const sleepUntil = (at: number) => new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * q)] as number;
const median = (xs: number[]) => quantile(xs, 0.5);
/**
 * Which of the measured times to reach D1 a payment is aimed by: they have a long tail on a
 * busy machine, and aiming by the median sends more than half of the payments past their
 * deadline; by the third quartile the outcomes are nearer even.
 */
const AIM_QUANTILE = 0.75;

/** Buys one unit for each of `count` fresh buyers of `saleId`, one checkout every PACE_MS. */
async function trickleCheckouts(saleId: string, count: number, prefix: string): Promise<void> {
  const users = Array.from({ length: count }, (_, i) => `${prefix}-${saleId}-${i}`);
  const tokens = await Promise.all(users.map((u) => stack.api.userToken(u)));
  const from = Date.now();
  const answers = await Promise.all(
    tokens.map(async (token, i) => {
      await sleepUntil(from + i * PACE_MS);
      return stack.api.checkout(saleId, token);
    }),
  );
  expect(answers.filter((a) => a.status !== 202)).toEqual([]);
}

interface Sent {
  orderId: string;
  answer: Awaited<ReturnType<typeof pay>>;
  deadline: number;
}

/**
 * A payment sent again with its key when the connection broke before any answer (a busy
 * machine's reset), as a client does: the key makes the two one payment.
 */
async function payThroughResets(orderId: string, user: string): ReturnType<typeof pay> {
  for (let tries = 1; ; tries++) {
    try {
      return await pay(orderId, user);
    } catch (err) {
      if (tries === 3) throw err;
    }
  }
}

/**
 * Pays for `rows` one by one, each at `aimAt(row, i)` (asked again 300 ms before, as the aim
 * may move), while the cron's sweep runs again 200 ms after each run as well.
 */
async function payPaced(rows: D1Order[], aimAt: (row: D1Order, i: number) => number): Promise<(Sent & { aim: number })[]> {
  // A run that fails (a busy machine cut its request) is a cron run that failed: the next
  // one does its work; the assertions below judge the outcome. One run at a time, so a busy
  // machine is not sent more of them than it finishes.
  let paying = true;
  const sweeping = (async () => {
    while (paying) {
      await stack.worker.scheduled().catch(() => undefined);
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  try {
    return await Promise.all(
      rows.map(async (row, i) => {
        await sleepUntil(aimAt(row, i) - 300);
        const aim = aimAt(row, i);
        await sleepUntil(aim);
        const answer = await payThroughResets(row.order_id, row.user_id);
        return { orderId: row.order_id, answer, deadline: row.expires_at as number, aim };
      }),
    );
  } finally {
    paying = false;
    await sweeping;
  }
}

/** When each charged payment attempt of the sale's orders was written down (paid, or recorded for refund). */
async function attemptsFinished(saleId: string): Promise<Map<string, number>> {
  const results = await stack.worker.query<{ order_id: string; updated_at: number }>(
    `SELECT order_id, updated_at FROM payments WHERE status IN ('succeeded', 'refund_due')
     AND order_id IN (SELECT order_id FROM orders WHERE sale_id = ?)`,
    Number(saleId),
  );
  const ids = orderIdCipher(stack.secrets.ORDER_ID_KEY);
  return new Map(results.map((r: { order_id: string; updated_at: number }) => [ids.toPublic(r.order_id), r.updated_at]));
}

/**
 * For payments paced like the race's: how long one takes from when it is meant to leave to
 * its deciding D1 statement (the order's closed_at, by the same clock; a late timer in this
 * process and the Worker's work alike), and how much later its attempt is written down.
 */
async function timeToDecide(count: number): Promise<{ decideMs: number; recordedAfterMs: number }> {
  const sale = await stack.api.createSale({ stock: count, paymentWindowSec: 600, name: "payment timings" });
  await trickleCheckouts(sale.id, count, "timing");
  const rows = await settled(sale.id, count, ["pending"]);
  const from = Date.now();
  const sent = await payPaced(rows, (_, i) => from + i * PACE_MS);
  expect(sent.every((s) => s.answer.status === 200)).toBe(true);
  const closedAt = new Map((await d1Orders(sale.id)).map((r) => [r.order_id, r.closed_at as number]));
  const recordedAt = await attemptsFinished(sale.id);
  const closed = (s: Sent) => closedAt.get(s.orderId) as number;
  return {
    decideMs: quantile(
      sent.map((s) => closed(s) - s.aim),
      AIM_QUANTILE,
    ),
    recordedAfterMs: median(sent.map((s) => (recordedAt.get(s.orderId) as number) - closed(s))),
  };
}

describe("payments landing at the deadline", () => {
  it("ends each of 500 orders paid xor expired, and returns exactly the expired units", async () => {
    const ORDERS = 500;
    // The buyers check out one every PACE_MS, so their orders settle, and their windows close,
    // one every PACE_MS too. Each order's payment is sent so that it reaches D1's deciding
    // statement at its deadline plus an offset (below, in a shuffled order), by the time
    // measured on payments paced alike just before. For each order D1 decides between the
    // payment and the expiry (the expiry jobs and the cron's sweep run alike).
    // Measured before the race's sale exists, so its windows need only cover the checkouts and
    // their settlement, with room for a busy machine's settlement lag.
    const measured = await timeToDecide(30);
    let decideMs = measured.decideMs;
    const sale = await stack.api.createSale({
      stock: ORDERS,
      paymentWindowSec: Math.ceil((ORDERS * PACE_MS) / 1000) + 10, // every order settles before the first deadline
      name: "deadline race",
    });
    await trickleCheckouts(sale.id, ORDERS, "race");
    const rows = await settled(sale.id, ORDERS, ["pending"]);
    const first = Math.min(...rows.map((r) => r.expires_at as number));
    expect(first - decideMs - 300, "the orders took too long to settle for the race").toBeGreaterThan(Date.now());
    // Half the payments are aimed within ±20 ms of their deadlines, where D1 itself decides; the
    // other half earlier, by up to four times the time to decide measured above and at least a
    // second, so that a machine whose aim is off by hundreds of ms still sees payments win: two
    // busy runs had all 500 expire, one aimed at their deadlines and one with half of them
    // earlier by up to the measured 165 ms, when the time to decide grew to 790 ms meanwhile.
    const early = Math.max(1_000, 4 * measured.decideMs);
    const offset = (i: number) => {
      const place = (i * 7919) % ORDERS; // 7919 is prime: a permutation
      const share = place / (ORDERS - 1);
      return place % 2 === 0 ? -20 + 40 * share : -20 - early * share;
    };
    const aims = new Map<string, number>();
    const aimAt = (row: D1Order, i: number) => {
      const aim = (row.expires_at as number) + offset(i) - decideMs;
      aims.set(row.order_id, aim);
      return aim;
    };
    // Followed during the race as well (another test file may load the machine meanwhile): the
    // AIM_QUANTILE of the latest 25 charged attempts, from when each was meant to leave.
    const recent: number[] = [];
    const sampled = new Set<string>();
    let reading = false;
    const follow = setInterval(() => {
      if (reading) return;
      reading = true;
      void attemptsFinished(sale.id)
        .then((finished) => {
          for (const [orderId, finishedAt] of finished) {
            const aim = aims.get(orderId);
            if (aim === undefined || sampled.has(orderId)) continue;
            sampled.add(orderId);
            recent.push(finishedAt - measured.recordedAfterMs - aim);
            if (recent.length > 25) recent.shift();
            decideMs = quantile(recent, AIM_QUANTILE);
          }
        })
        // A read the busy machine cut leaves the aim as it was until the next one.
        .catch(() => undefined)
        .finally(() => {
          reading = false;
        });
    }, 250);
    const outcomes = await payPaced(rows, aimAt).finally(() => clearInterval(follow));

    const report = await reconciled(sale.id, { awaitingPayment: 0 });
    const final = new Map((await d1Orders(sale.id)).map((r) => [r.order_id, r]));
    const paidLandings: number[] = [];
    let expired = 0;
    let undecided = 0;
    for (const { orderId, answer, deadline } of outcomes) {
      const row = final.get(orderId) as D1Order;
      expect(["paid", "expired"], orderId).toContain(row.status);
      if (row.status === "paid") {
        paidLandings.push((row.closed_at as number) - deadline);
        expect(answer.status, `${orderId} is paid, so its payment must have said so`).toBe(200);
        expect(row.refund_due).toBe(0);
      } else {
        expired++;
        // Refused as too late, or (a busy machine) not decided in time: retry with the same key. Never paid.
        expect(
          [
            { status: 409, code: "ORDER_NOT_PAYABLE" },
            { status: 503, code: "UNAVAILABLE" },
          ],
          `${orderId} expired, so its payment must not have said paid`,
        ).toContainEqual({ status: answer.status, code: answer.code });
        if (answer.status === 503) undecided++;
      }
    }
    const paid = paidLandings.length;
    const within20 = paidLandings.filter((ms) => ms >= -20).length;
    console.log(
      `deadline race: ${paid} paid, ${expired} expired (${undecided} of their payments answered 503), ${report.refundsDue} charges recorded for refund; ` +
        `${within20} of the paid decided within 20 ms before their deadline (median ${paid > 0 ? median(paidLandings) : "-"} ms); ` +
        `a payment reached D1 ${measured.decideMs} ms after it was meant to leave when measured, ${Math.round(decideMs)} ms at the end`,
    );
    expect(paid, "no payment won the race: the test did not race").toBeGreaterThan(0);
    expect(expired, "no expiry won the race: the test did not race").toBeGreaterThan(0);
    // Charges that passed the route's own check yet lost in D1: the race decided by D1 itself.
    // That takes payments reaching D1 within milliseconds of their deadlines; on a machine so
    // busy that fewer than five of the paid landed within 20 ms of one (the aim measured in
    // this run was off by hundreds of ms), the run shows the route's side of the race only.
    // Of fourteen runs on record, quiet and busy, the six with five or more all left charges
    // lost in D1; of the two with two, one did.
    if (within20 >= 5)
      expect(report.refundsDue, "no charge lost to the expiry in D1: the test did not race there").toBeGreaterThan(0);
    expect(report.refundsDue).toBe(await chargesAccountedFor(sale.id));
    for (const ms of paidLandings) expect(ms).toBeLessThan(0); // paid only before the deadline, by D1's clock
    expect(paid + expired).toBe(ORDERS);
    expect(report.redis.returned).toBe(expired);
    expect(report.d1.returnedUnits).toBe(expired);
    expect(report.redis.remaining).toBe(expired);
    expect(report.states.expired.units).toBe(expired);
    expect(report.d1.soldCounter).toBe(paid);
  });
});

describe("quantities", () => {
  it("mixed 1-3 unit checkouts under a limit of 3 never oversell, never pass the limit, and say how many remain", async () => {
    const STOCK = 60;
    const sale = await stack.api.createSale({ stock: STOCK, perUserLimit: 3, name: "quantities" });
    const users = Array.from({ length: 80 }, (_, i) => `qty-${sale.id}-${i}`);
    const tokens = new Map(await Promise.all(users.map(async (u) => [u, await stack.api.userToken(u)] as const)));
    // A fixed pseudo-random quantity per attempt: every run asks for the same.
    const quantity = (i: number) => 1 + ((i * 7919) % 3);
    const attempts = [...users, ...users].map((user, i) => ({ user, quantity: quantity(i) }));
    const results = await Promise.all(
      attempts.map(async ({ user, quantity: n }) => {
        const res = await stack.api.checkoutResponse(sale.id, tokens.get(user) as string, {
          body: JSON.stringify({ quantity: n }),
          headers: { "Content-Type": "application/json" },
        });
        const body = (await res.json()) as { orderId?: string; quantity?: number; error?: { code: string; message: string } };
        return { user, n, status: res.status, body };
      }),
    );

    const heldBy = new Map<string, number>();
    let sold = 0;
    for (const r of results) {
      if (r.status === 202) {
        expect(r.body.quantity).toBe(r.n);
        heldBy.set(r.user, (heldBy.get(r.user) ?? 0) + r.n);
        sold += r.n;
        continue;
      }
      expect(r.status).toBe(409);
      const code = r.body.error?.code;
      expect(["SOLD_OUT", "QUANTITY_UNAVAILABLE", "PER_USER_LIMIT_EXCEEDED", "ALREADY_PURCHASED"]).toContain(code);
      if (code === "QUANTITY_UNAVAILABLE") {
        const left = Number(/only (\d+) unit/.exec(r.body.error?.message ?? "")?.[1]);
        expect(left, r.body.error?.message).toBeGreaterThan(0);
        expect(left).toBeLessThan(r.n);
      }
    }
    expect(sold).toBeLessThanOrEqual(STOCK);
    for (const [user, held] of heldBy) expect(held, user).toBeLessThanOrEqual(3);

    const report = await stack.drain(sale.id, results.filter((r) => r.status === 202).length);
    expect(report.reconciled).toBe(true);
    expect(report.oversold).toBe(0);
    expect(report.redis.reserved).toBe(sold);
    expect(report.d1.soldCounter).toBe(sold);
    const perUser = new Map<string, number>();
    for (const row of await d1Orders(sale.id)) perUser.set(row.user_id, (perUser.get(row.user_id) ?? 0) + row.quantity);
    expect(perUser).toEqual(heldBy);
  });
});
