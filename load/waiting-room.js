// A waiting-room drop against a deployed Worker: BUYERS join a fifo sale's pre-queue (a tenth
// of them bots), the sale starts, people wait for their turn and buy with their pass, and bots
// hammer checkout without a pass, share one pass among many accounts and replay used passes.
// The teardown waits for the settlement queue and fails the run unless every unit went to a
// holder of their own pass, no bot without its own admitted pass got a unit, and the places
// let in are one run from the front.
//
//   k6 run -e BASE_URL=https://<worker> -e JWT_SECRET=... -e ADMIN_TOKEN=... load/waiting-room.js
//   optional: -e BUYERS=20000 -e STOCK=300 -e ADMIT=100 (places let in per second)
//             -e VARIANTS=10 (the sale in 10 variants sharing STOCK; each buyer asks a random one)
//             -e JOIN_S=60 (the pre-queue: everyone joins within it) -e VUS=500 -e DRAIN_TIMEOUT_S=120
//
// One k6 machine is one client address: raise or turn off IP_RATE_LIMIT for the run.
import { sleep } from "k6";
import exec from "k6/execution";
import http from "k6/http";
import { Counter } from "k6/metrics";
import { admin, checkoutBody, saleStock } from "./lib/api.js";
import { BASE_URL, JWT_SECRET, number } from "./lib/env.js";
import { mintUserToken } from "./lib/jwt.js";

const BUYERS = number("BUYERS", 20_000);
const STOCK = number("STOCK", 300);
const ADMIT = number("ADMIT", 100);
const JOIN_S = number("JOIN_S", 60);
const VUS = number("VUS", 500);
const DRAIN_TIMEOUT_S = number("DRAIN_TIMEOUT_S", 120);

/** A unit a bot got without its own admitted pass: the run fails on one. */
const botStole = new Counter("queue_bot_unit_without_own_pass");
const bought = new Counter("queue_bought_with_pass");
const failed = new Counter("queue_failed");

/** @type {import("k6/options").Options} */
export const options = {
  scenarios: {
    join: { executor: "shared-iterations", exec: "join", vus: VUS, iterations: BUYERS, maxDuration: `${JOIN_S}s` },
    // From the start: each VU takes its share of the line and follows each buyer to the end.
    turns: {
      executor: "per-vu-iterations",
      exec: "turns",
      vus: VUS,
      iterations: 1,
      startTime: `${JOIN_S + 2}s`,
      maxDuration: "20m",
    },
  },
  thresholds: { queue_bot_unit_without_own_pass: ["count==0"], queue_failed: ["count==0"] },
};

/** Refusals are answers here, not failures. */
const answers = http.expectedStatuses(200, 202, 403, 409, 429);
const isBot = (/** @type {number} */ i) => i % 10 === 0;
const userOf = (/** @type {string} */ saleId, /** @type {number} */ i) => `${isBot(i) ? "bot" : "person"}-${saleId}-${i}`;

/** @param {string} userId @param {Record<string, string>} [extra] */
const headers = (userId, extra = {}) => ({ Authorization: `Bearer ${mintUserToken(userId, JWT_SECRET)}`, ...extra });

/** @returns {{ saleId: string, startsAt: number }} */
export function setup() {
  const startsAt = Date.now() + (JOIN_S + 2) * 1000;
  const sale = admin("POST", "/admin/sales", {
    name: `k6 queue ${new Date().toISOString()}`,
    ...saleStock(STOCK),
    startsAt: new Date(startsAt).toISOString(),
    endsAt: new Date(startsAt + 3_600_000).toISOString(),
    queue: { mode: "fifo", prequeueSec: JOIN_S + 60, admitPerSec: ADMIT, passTtlSec: 60 },
  });
  return { saleId: String(sale.id), startsAt };
}

/** @param {string} saleId @param {string} userId @returns {any} */
function joinAs(saleId, userId) {
  const res = http.post(`${BASE_URL}/api/sales/${saleId}/queue`, null, {
    headers: headers(userId),
    tags: { name: "join" },
    responseCallback: answers,
  });
  if (res.status !== 200) failed.add(1, { step: "join" });
  return res.status === 200 ? res.json() : undefined;
}

/** @param {string} saleId @param {string} userId @param {string | undefined} pass */
function checkout(saleId, userId, pass) {
  const { body, headers: bodyHeaders } = checkoutBody();
  return http.post(`${BASE_URL}/api/sales/${saleId}/checkout`, body, {
    headers: headers(userId, { ...bodyHeaders, ...(pass ? { "Queue-Pass": pass } : {}) }),
    tags: { name: "checkout" },
    responseCallback: answers,
  });
}

/** @param {{ saleId: string }} data */
export function join(data) {
  joinAs(data.saleId, userOf(data.saleId, exec.scenario.iterationInTest));
}

/** Polls the buyer's place until the pass comes or nothing will. @returns {any} */
function turnOf(/** @type {string} */ saleId, /** @type {string} */ userId) {
  const joined = joinAs(saleId, userId); // again: the same ticket
  if (!joined) return undefined;
  for (;;) {
    const res = http.get(`${BASE_URL}/api/sales/${saleId}/queue`, {
      headers: headers(userId, { "Queue-Ticket": joined.ticket }),
      tags: { name: "poll" },
      responseCallback: answers,
    });
    if (res.status !== 200) {
      sleep(1);
      continue;
    }
    const position = /** @type {any} */ (res.json());
    if (position.state !== "waiting") return position;
    sleep(Math.min(5, position.retryAfterSec));
  }
}

/** @param {{ saleId: string }} data */
export function turns(data) {
  const { saleId } = data;
  // This VU's buyers, in place order: every VUS-th from its own number.
  for (let i = exec.vu.idInTest - 1; i < BUYERS; i += VUS) {
    const userId = userOf(saleId, i);
    if (isBot(i)) {
      // No pass; another account's copy of a pass; then its own, replayed.
      if (checkout(saleId, userId, undefined).status === 202) botStole.add(1);
      const turn = turnOf(saleId, userId);
      if (turn?.pass) {
        for (let k = 1; k <= 5; k++)
          if (checkout(saleId, userOf(saleId, (i + 10 * k) % BUYERS), turn.pass).status === 202) botStole.add(1);
        checkout(saleId, userId, turn.pass); // its own: allowed once
        if (checkout(saleId, userId, turn.pass).status === 202) botStole.add(1);
      }
      continue;
    }
    const turn = turnOf(saleId, userId);
    if (turn?.state === "sold_out") break; // the rest of this VU's line will not get a unit either
    if (turn?.pass && checkout(saleId, userId, turn.pass).status === 202) bought.add(1);
  }
}

/** @param {{ saleId: string }} data */
export function teardown(data) {
  const deadline = Date.now() + DRAIN_TIMEOUT_S * 1000;
  let report = admin("GET", `/admin/sales/${data.saleId}/report`);
  while ((report.pending > 0 || report.redis.outbox > 0) && Date.now() < deadline) {
    sleep(1);
    report = admin("GET", `/admin/sales/${data.saleId}/report`);
  }
  const stats = admin("GET", `/admin/sales/${data.saleId}/queue`);
  console.log(`sale ${data.saleId}: ${JSON.stringify({ queue: stats, report })}`);
  /** @type {string[]} */
  const problems = [];
  // Each buyer buys one unit with its pass: units taken = passes used.
  if (report.redis.reserved !== stats.passesUsed)
    problems.push(`${report.redis.reserved} units went out for ${stats.passesUsed} passes used`);
  if (stats.passesUsed + stats.passesExpired > stats.admitted)
    problems.push(`${stats.passesUsed + stats.passesExpired} passes ended of ${stats.admitted} let in`);
  // The places let in are 1..admitted: each holder of one is in the places list, in order.
  let from = 1;
  while (from !== null && from <= stats.admitted) {
    const page = admin("GET", `/admin/sales/${data.saleId}/queue/places?from=${from}`);
    page.places.forEach((/** @type {{ place: number }} */ p, /** @type {number} */ k) => {
      if (p.place !== from + k) problems.push(`place ${from + k} is missing from the line`);
    });
    from = page.next;
  }
  if (report.oversold > 0) problems.push(`${report.oversold} units oversold`);
  if (report.redis.reserved !== report.redis.buyers)
    problems.push(`${report.redis.reserved} units for ${report.redis.buyers} buyers`);
  if (!report.reconciled) problems.push("Redis and D1 do not reconcile");
  if (problems.length > 0) exec.test.abort(`invariants violated: ${problems.join("; ")}`);
}
