// A flash-sale spike against a deployed Worker: one sale, a crowd of unique users arriving
// at a ramping rate, thresholds on failures and p99, counters per outcome, and a teardown
// that waits for the settlement queue and fails the run on any oversell or duplicate.
//
//   k6 run -e BASE_URL=https://<worker> -e JWT_SECRET=... -e ADMIN_TOKEN=... load/spike.js
//   optional: -e VARIANTS=10 (the sale in 10 variants sharing STOCK; each buyer asks a random one)
//             -e STOCK=300 -e RATE=500 (arrivals/s at the peak) -e RAMP=5s -e HOLD=20s
//             -e P99_MS=1000 -e VUS=200 -e MAX_VUS=2000 -e DRAIN_TIMEOUT_S=120
//
// One k6 machine is one client address: the Worker's per-address limit (IP_RATE_LIMIT)
// answers most of the crowd 429 unless it is raised or set to "0" for the test.
import { sleep } from "k6";
import exec from "k6/execution";
import http from "k6/http";
import { admin, checkoutRequest, countOutcome, saleStock } from "./lib/api.js";
import { number } from "./lib/env.js";

const STOCK = number("STOCK", 300);
const RATE = number("RATE", 500);
const P99_MS = number("P99_MS", 1000);
const DRAIN_TIMEOUT_S = number("DRAIN_TIMEOUT_S", 120);

/** @type {import("k6/options").Options} */
export const options = {
  scenarios: {
    spike: {
      executor: "ramping-arrival-rate",
      startRate: 0,
      timeUnit: "1s",
      preAllocatedVUs: number("VUS", 200),
      maxVUs: number("MAX_VUS", 2000),
      stages: [
        { target: RATE, duration: __ENV.RAMP || "5s" },
        { target: RATE, duration: __ENV.HOLD || "20s" },
        { target: 0, duration: "5s" },
      ],
    },
  },
  thresholds: {
    http_req_failed: ["rate<0.01"],
    "http_req_duration{name:checkout}": [`p(99)<${P99_MS}`],
    checkout_failed: ["count==0"],
  },
};

/** @returns {{ saleId: string }} */
export function setup() {
  const sale = admin("POST", "/admin/sales", {
    name: `k6 spike ${new Date().toISOString()}`,
    ...saleStock(STOCK),
    startsAt: new Date(Date.now() - 1000).toISOString(),
    endsAt: new Date(Date.now() + 3_600_000).toISOString(),
  });
  return { saleId: String(sale.id) };
}

/** @param {{ saleId: string }} data */
export default function (data) {
  // Every iteration is a new user: the sale's id keeps them apart from earlier runs.
  const userId = `k6-${data.saleId}-${exec.scenario.iterationInTest}`;
  const { method, url, body, params } = checkoutRequest(`/api/sales/${data.saleId}/checkout`, userId);
  countOutcome(http.request(method, url, body, params));
}

/** @param {{ saleId: string }} data */
export function teardown(data) {
  const deadline = Date.now() + DRAIN_TIMEOUT_S * 1000;
  let report = admin("GET", `/admin/sales/${data.saleId}/report`);
  while ((report.pending > 0 || report.redis.outbox > 0) && Date.now() < deadline) {
    sleep(1);
    report = admin("GET", `/admin/sales/${data.saleId}/report`);
  }
  console.log(`sale ${data.saleId} after the drain: ${JSON.stringify(report)}`);
  /** @type {string[]} */
  const problems = [];
  if (report.oversold > 0) problems.push(`${report.oversold} units oversold`);
  if (report.redis.reserved !== report.redis.buyers) {
    problems.push(`${report.redis.reserved} units reserved for ${report.redis.buyers} buyers (duplicates)`);
  }
  if (report.d1.confirmed > report.stock) problems.push(`D1 confirmed ${report.d1.confirmed} orders for ${report.stock} units`);
  if (report.pending > 0) problems.push(`${report.pending} orders still pending after ${DRAIN_TIMEOUT_S} s`);
  if (!report.reconciled) problems.push("Redis and D1 do not reconcile");
  if (problems.length > 0) exec.test.abort(`invariants violated: ${problems.join("; ")}`);
}
