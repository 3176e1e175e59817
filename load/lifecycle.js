// The order's life after the 202 under load, against a Worker with PAYMENT_PROVIDER=dev
// (test tokens; never production: it pays only on a loopback Host, so npm start): a spike
// of new buyers on a sale with a payment window, where each winner pays, cancels or walks
// away in set shares; then, once the window has closed on those who walked away, a second
// crowd that buys the units that came back, and pays. The teardown waits for settlement and
// expiries and fails the run on any unit sold twice, on units that came back but were not
// sold again, or on a report that does not reconcile.
//
//   k6 run -e BASE_URL=http://127.0.0.1:8787 -e JWT_SECRET=... -e ADMIN_TOKEN=... load/lifecycle.js
//   optional: -e VARIANTS=10 (the sale in 10 variants sharing STOCK; each buyer asks a random one)
//             -e STOCK=200 -e RATE=200 (arrivals/s) -e HOLD_S=10 -e WINDOW_S=20 (payment window)
//             -e PAY=0.6 -e CANCEL=0.2 (the rest walk away) -e VUS=200 -e MAX_VUS=1000
//             -e DRAIN_TIMEOUT_S=120
import { sleep } from "k6";
import exec from "k6/execution";
import http from "k6/http";
import { Counter } from "k6/metrics";
import { admin, checkoutRequest, countOutcome, saleStock } from "./lib/api.js";
import { BASE_URL, JWT_SECRET, number } from "./lib/env.js";
import { mintUserToken } from "./lib/jwt.js";

const STOCK = number("STOCK", 200);
const RATE = number("RATE", 200);
const HOLD_S = number("HOLD_S", 10);
const WINDOW_S = number("WINDOW_S", 20);
const PAY = number("PAY", 0.6);
const CANCEL = number("CANCEL", 0.2);
const DRAIN_TIMEOUT_S = number("DRAIN_TIMEOUT_S", 120);
/** The second crowd arrives once every unpaid order of the first has expired. */
const RESALE_START_S = 5 + HOLD_S + WINDOW_S + 10;

const choices = {
  paid: new Counter("lifecycle_paid"),
  cancelled: new Counter("lifecycle_cancelled"),
  walked: new Counter("lifecycle_walked_away"),
  stuck: new Counter("lifecycle_stuck"),
};

/** @type {import("k6/options").Options} */
export const options = {
  scenarios: {
    spike: {
      executor: "ramping-arrival-rate",
      exec: "firstCrowd",
      startRate: 0,
      timeUnit: "1s",
      preAllocatedVUs: number("VUS", 200),
      maxVUs: number("MAX_VUS", 1000),
      stages: [
        { target: RATE, duration: "5s" },
        { target: RATE, duration: `${HOLD_S}s` },
      ],
    },
    resale: {
      executor: "constant-arrival-rate",
      exec: "secondCrowd",
      startTime: `${RESALE_START_S}s`,
      rate: RATE,
      timeUnit: "1s",
      duration: "10s",
      preAllocatedVUs: number("VUS", 200),
      maxVUs: number("MAX_VUS", 1000),
    },
  },
  thresholds: {
    http_req_failed: ["rate<0.01"],
    checkout_failed: ["count==0"],
    lifecycle_stuck: ["count==0"],
  },
};

/** @returns {{ saleId: string }} */
export function setup() {
  const sale = admin("POST", "/admin/sales", {
    name: `k6 lifecycle ${new Date().toISOString()}`,
    ...saleStock(STOCK),
    price: 1999,
    currency: "EUR",
    paymentWindowSec: WINDOW_S,
    startsAt: new Date(Date.now() - 1000).toISOString(),
    endsAt: new Date(Date.now() + 3_600_000).toISOString(),
  });
  return { saleId: String(sale.id) };
}

/**
 * Buys one unit as a new user; on a 202, waits for the order to await payment.
 * @param {string} saleId
 * @param {string} userId
 * @returns {{ orderId: string; auth: Record<string, string> } | undefined}
 */
function buy(saleId, userId) {
  const { method, url, body, params } = checkoutRequest(`/api/sales/${saleId}/checkout`, userId);
  const res = http.request(method, url, body, params);
  countOutcome(res);
  if (res.status !== 202) return undefined;
  const orderId = String(/** @type {{ orderId: string }} */ (res.json()).orderId);
  const auth = { Authorization: `Bearer ${mintUserToken(userId, JWT_SECRET)}` };
  for (let i = 0; i < 40; i++) {
    const order = http.get(`${BASE_URL}/api/orders/${orderId}`, { headers: auth, tags: { name: "order" } });
    if (order.status === 200 && /** @type {{ status: string }} */ (order.json()).status === "awaiting_payment") {
      return { orderId, auth };
    }
    sleep(0.25);
  }
  choices.stuck.add(1);
  return undefined;
}

/**
 * @param {{ orderId: string; auth: Record<string, string> }} order
 * @returns {boolean} whether the payment went through
 */
function pay(order) {
  const res = http.post(`${BASE_URL}/api/orders/${order.orderId}/pay`, JSON.stringify({ paymentToken: "tok_visa" }), {
    headers: { ...order.auth, "Content-Type": "application/json", "Idempotency-Key": `k6-${order.orderId}` },
    tags: { name: "pay" },
  });
  return res.status === 200;
}

/** @param {{ saleId: string }} data */
export function firstCrowd(data) {
  const order = buy(data.saleId, `k6-${data.saleId}-first-${exec.scenario.iterationInTest}`);
  if (!order) return;
  const roll = Math.random();
  if (roll < PAY) {
    if (pay(order)) choices.paid.add(1);
    else choices.stuck.add(1);
  } else if (roll < PAY + CANCEL) {
    const res = http.post(`${BASE_URL}/api/orders/${order.orderId}/cancel`, null, {
      headers: order.auth,
      tags: { name: "cancel" },
    });
    if (res.status === 200) choices.cancelled.add(1);
    else choices.stuck.add(1);
  } else {
    choices.walked.add(1); // the window closes on it; its unit comes back
  }
}

/** @param {{ saleId: string }} data */
export function secondCrowd(data) {
  const order = buy(data.saleId, `k6-${data.saleId}-second-${exec.scenario.iterationInTest}`);
  if (order && pay(order)) choices.paid.add(1);
  else if (order) choices.stuck.add(1);
}

/** @param {{ saleId: string }} data */
export function teardown(data) {
  const deadline = Date.now() + DRAIN_TIMEOUT_S * 1000;
  const path = `/admin/sales/${data.saleId}/report`;
  let report = admin("GET", path);
  const busy = (/** @type {any} */ r) =>
    r.pending > 0 || r.redis.outbox > 0 || r.returnsPending > 0 || r.states.awaiting_payment.orders > 0;
  while (busy(report) && Date.now() < deadline) {
    sleep(1);
    report = admin("GET", path);
  }
  console.log(`sale ${data.saleId} after the drain: ${JSON.stringify(report)}`);
  const { states } = report;
  /** @type {string[]} */
  const problems = [];
  if (report.oversold > 0) problems.push(`${report.oversold} units sold twice`);
  if (report.d1.soldCounter > report.stock) problems.push(`D1 counts ${report.d1.soldCounter} units held of ${report.stock}`);
  if (busy(report)) problems.push(`settlement, expiries or returns still running after ${DRAIN_TIMEOUT_S} s`);
  const cameBack = states.expired.units + states.cancelled.units;
  if (cameBack === 0) problems.push("no unit came back: raise the crowd or the walk-away share");
  // Every unit that came back was bought again, and paid: the second crowd outnumbers them.
  if (states.paid.units !== report.stock) {
    problems.push(`${states.paid.units} units paid of ${report.stock}: ${cameBack} came back, not all were sold again`);
  }
  if (!report.reconciled) problems.push("Redis and D1 do not reconcile");
  if (problems.length > 0) exec.test.abort(`lifecycle invariants violated: ${problems.join("; ")}`);
}
