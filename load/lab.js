// The oversell lab against a Worker with LAB_ENABLED=true (never production): the same crowd
// against each strategy in turn, every user clicking twice at once, then the lab's report.
// Fails the run if a strategy other than `naive` oversold or sold twice to one user; naive
// is there to show that it does.
//
//   k6 run -e BASE_URL=http://127.0.0.1:8787 -e JWT_SECRET=... -e ADMIN_TOKEN=... load/lab.js
//   optional: -e STOCK=300 -e RATE=200 (users/s) -e DURATION_S=10 -e VUS=200 -e MAX_VUS=1000
// The redlock strategy needs LOCK_QUORUM_NODES on the Worker (without it, it answers 503).
import { sleep } from "k6";
import exec from "k6/execution";
import http from "k6/http";
import { admin, checkoutRequest, countOutcome } from "./lib/api.js";
import { number } from "./lib/env.js";

// The lab's strategies in its report's order (src/shared/lab-strategies.ts; k6 reads no TypeScript).
const OBJECTS = /** @type {const} */ (["durable-object", "durable-object-merged"]);
const STRATEGIES = /** @type {const} */ (["naive", "lock", "redlock", "optimistic", "atomic", ...OBJECTS, "design-card"]);
const STOCK = number("STOCK", 300);
const RATE = number("RATE", 200);
const DURATION_S = number("DURATION_S", 10);
const PAUSE_S = 5;

// A strategy that gives up under contention answers 503 BUSY: an outcome here, not a failure.
http.setResponseCallback(http.expectedStatuses(200, 201, 202, 409, 429, 503));

/** @type {import("k6/options").Options} */
export const options = {
  scenarios: Object.fromEntries(
    STRATEGIES.map((strategy, i) => [
      strategy,
      {
        executor: "constant-arrival-rate",
        exec: strategy.replace(/-/g, "_"),
        rate: RATE,
        timeUnit: "1s",
        duration: `${DURATION_S}s`,
        startTime: `${i * (DURATION_S + PAUSE_S)}s`,
        preAllocatedVUs: number("VUS", 200),
        maxVUs: number("MAX_VUS", 1000),
      },
    ]),
  ),
  thresholds: { checkout_failed: ["count==0"] },
};

/** @returns {{ labSaleId: string }} */
export function setup() {
  return { labSaleId: String(admin("POST", "/lab/sales", { stock: STOCK }).id) };
}

/**
 * One user, two simultaneous clicks.
 * @param {(typeof STRATEGIES)[number]} strategy
 * @param {{ labSaleId: string }} data
 */
function buy(strategy, data) {
  const userId = `k6-lab-${data.labSaleId}-${exec.scenario.iterationInTest}`;
  const request = checkoutRequest(`/lab/${strategy}/sales/${data.labSaleId}/checkout`, userId);
  for (const res of http.batch([request, request])) countOutcome(res, { strategy });
}

/** @param {{ labSaleId: string }} data */
export const naive = (data) => buy("naive", data);
/** @param {{ labSaleId: string }} data */
export const lock = (data) => buy("lock", data);
/** @param {{ labSaleId: string }} data */
export const redlock = (data) => buy("redlock", data);
/** @param {{ labSaleId: string }} data */
export const optimistic = (data) => buy("optimistic", data);
/** @param {{ labSaleId: string }} data */
export const atomic = (data) => buy("atomic", data);
/** @param {{ labSaleId: string }} data */
export const durable_object = (data) => buy("durable-object", data);
/** @param {{ labSaleId: string }} data */
export const durable_object_merged = (data) => buy("durable-object-merged", data);
/** @param {{ labSaleId: string }} data */
export const design_card = (data) => buy("design-card", data);

/** @param {{ labSaleId: string }} data */
export function teardown(data) {
  sleep(1);
  /** @type {Record<string, { stock: number; accepted: number; oversold: number; duplicates: number; unsold: number }>} */
  const copies = admin("GET", `/lab/sales/${data.labSaleId}/report`).strategies;
  /** @type {string[]} */
  const problems = [];
  for (const strategy of STRATEGIES) {
    const c = copies[strategy];
    if (!c) continue;
    console.log(
      `${strategy}: stock ${c.stock}, accepted ${c.accepted}, oversold ${c.oversold}, duplicates ${c.duplicates}, unsold ${c.unsold}`,
    );
    if (strategy !== "naive" && (c.oversold > 0 || c.duplicates > 0)) {
      problems.push(`${strategy} oversold ${c.oversold} and sold ${c.duplicates} duplicates`);
    }
  }
  if (problems.length > 0) exec.test.abort(problems.join("; "));
}
