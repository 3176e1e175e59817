// Redis really stopped in the middle of a spike (SIGTERM to redis-server), then started
// again on the same port and data: the Worker on Miniflare, the gateway, local D1 and
// Queues are all real; nothing is faked.
// Guarantees, at any machine speed: while Redis is down every checkout is a 503 with
// Retry-After, none waits past the checkout's bound on Redis (two calls' worth, within the
// merged calls' bound on a wait) by more than a trivial request of the same moment waits (the
// scheduling delay, measured beside it), the service resumes by itself, and every reservation
// settles exactly once.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { orderIdCipher } from "../../dev/lib/order-ids.ts";
import { mergedHash } from "../../dev/lib/sale-buckets.ts";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";

const STOCK = 250;
const SPIKE = 500; // distinct users, one attempt each, launched in waves
const WAVE = 25;
const WAVE_EVERY_MS = 40;
const STOP_AFTER_WAVES = 6; // ~150 attempts reach Redis before it goes: never sold out by then
/** The Worker's bound on one Redis request here (REDIS_TIMEOUT_MS). */
const REDIS_TIMEOUT_MS = 2_000;
/** The merged calls' bound on a checkout's wait (CHECKOUT_MERGING.maxWaitMs in src/checkout/reserve.ts, which imports the Worker's types). */
const MERGED_WAIT_BOUND_MS = 8_000;
/**
 * The longest a checkout may wait on Redis, beyond the machine's own delay. One call: the
 * Worker's client tries once more after 25 ms (src/redis/client.ts), each try bounded by the
 * timeout. A checkout may wait behind the call in flight and then ride the next, within the
 * merged calls' own bound on a wait (a busy run's waiter took 10.1 s against the one call's 4 s).
 */
const REDIS_WAIT_BOUND_MS = Math.min(2 * (2 * REDIS_TIMEOUT_MS + 25), MERGED_WAIT_BOUND_MS);

type Outcome = { user: string; status: number; code?: string; orderId?: string; retryAfter: string | null; ms: number };

let stack: Stack;
let dataDir: string;
let redis: Redis;
/** The Worker's console output, kept out of the test log (hundreds of 503 warnings). */
const workerLogs: { level: string; message: string }[] = [];

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), "flash-outage-"));
  stack = await startStack({
    redisDataDir: dataDir, // AOF: a stopped Redis comes back with its data
    vars: { REDIS_TIMEOUT_MS: String(REDIS_TIMEOUT_MS), OUTBOX_REDRIVE_AFTER_MS: "1000" },
    onWorkerLog: (log) => {
      workerLogs.push(log);
      if (log.level === "error") console.error(log.message);
    },
  });
  redis = new Redis(stack.redis.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
});
afterAll(async () => {
  redis?.disconnect();
  await stack?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function attempt(saleId: string, user: string): Promise<Outcome> {
  const token = await stack.api.userToken(user);
  const started = performance.now();
  const answer = await stack.api.checkout(saleId, token);
  const ms = performance.now() - started;
  return {
    user,
    status: answer.status,
    code: answer.status === 202 ? undefined : answer.code,
    orderId: answer.orderId,
    retryAfter: answer.headers?.get("Retry-After") ?? null,
    ms,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** How long a trivial request (GET /healthz, no Redis) takes right now: the machine's own delay. */
async function trivialRequest(): Promise<{ launchedAt: number; ms: number }> {
  const launchedAt = performance.now();
  const res = await stack.worker.fetch("/healthz");
  await res.arrayBuffer();
  return { launchedAt, ms: performance.now() - launchedAt };
}

function expectAllowed(o: Outcome) {
  // Nothing but 202, 409 (sold out / already bought) and 503 UNAVAILABLE, ever.
  if (o.status === 202) return expect(o.orderId).toMatch(/^[1-9][0-9]+$/);
  if (o.status === 409) return expect(["SOLD_OUT", "ALREADY_PURCHASED"]).toContain(o.code);
  expect({ status: o.status, code: o.code }).toEqual({ status: 503, code: "UNAVAILABLE" });
  expect(o.retryAfter).toMatch(/^[1-9][0-9]*$/);
}

describe("Redis stopped mid-spike", () => {
  it("fails closed with quick 503s while down, recovers by itself, and settles every reservation once", async () => {
    const sale = await stack.api.createSale({ stock: STOCK, name: "outage" });
    const users = Array.from({ length: SPIKE }, (_, i) => `outage-${sale.id}-${i}`);

    // The spike: waves of fresh users; Redis is stopped after STOP_AFTER_WAVES waves and
    // stays down until every attempt of the spike has been answered.
    let downSince = Number.POSITIVE_INFINITY;
    const inFlight: { launchedAt: number; outcome: Promise<Outcome> }[] = [];
    const trivial: Promise<{ launchedAt: number; ms: number }>[] = [];
    let stopped: Promise<void> | undefined;
    let sold: () => void = () => undefined;
    const soldOnce = new Promise<void>((resolve) => {
      sold = resolve;
    });
    for (let w = 0; w * WAVE < SPIKE; w++) {
      if (w === STOP_AFTER_WAVES) {
        // Not before the spike has sold something: on a busy machine no wave may have reached
        // Redis yet, and the outage must cut a sale that was selling.
        await soldOnce;
        stopped = stack.redis.stop().then(() => {
          downSince = performance.now();
        });
      }
      for (const user of users.slice(w * WAVE, (w + 1) * WAVE)) {
        const outcome = attempt(sale.id, user);
        outcome.then(
          (o) => o.status === 202 && sold(),
          () => undefined, // its own await below reports it
        );
        inFlight.push({ launchedAt: performance.now(), outcome });
      }
      trivial.push(trivialRequest());
      await sleep(WAVE_EVERY_MS);
    }
    await stopped;
    const spike = await Promise.all(inFlight.map(async (f) => ({ launchedAt: f.launchedAt, ...(await f.outcome) })));

    // While down (launched after the process had exited): every attempt is a quick 503.
    const whileDown = spike.filter((o) => o.launchedAt > downSince);
    for (let i = 0; i < 5; i++) trivial.push(trivialRequest());
    const more = await Promise.all(Array.from({ length: 40 }, (_, i) => attempt(sale.id, `outage-${sale.id}-down-${i}`)));
    whileDown.push(...more.map((o) => ({ ...o, launchedAt: performance.now() })));
    expect(whileDown.length).toBeGreaterThan(100);
    // The slowest trivial request sent while Redis was down: what the machine itself added.
    const delayMs = Math.max(...(await Promise.all(trivial)).filter((t) => t.launchedAt > downSince).map((t) => t.ms));
    for (const o of whileDown) {
      expect({ status: o.status, code: o.code }).toEqual({ status: 503, code: "UNAVAILABLE" });
      expect(o.retryAfter).toBe("1");
      // The machine's delay can meet a checkout three times: on its way in, when its timeout
      // fires, and on its way out.
      expect(o.ms).toBeLessThan(REDIS_WAIT_BOUND_MS + 3 * delayMs);
    }
    // Other routes fail closed too, never with a 500.
    const reportWhileDown = await stack.worker.fetch(`/admin/sales/${sale.id}/report`, {
      headers: { Authorization: `Bearer ${stack.secrets.ADMIN_TOKEN}` },
    });
    expect(reportWhileDown.status).toBe(503);
    await reportWhileDown.arrayBuffer();

    const beforeStop = spike.filter((o) => o.launchedAt <= downSince);
    expect(beforeStop.filter((o) => o.status === 202).length).toBeGreaterThan(0);
    for (const o of spike) expectAllowed(o);

    // Back up (same port, same AOF): service resumes without anyone touching the Worker.
    const upAt = performance.now();
    await stack.redis.restart();
    const probes: Outcome[] = [];
    for (let i = 0; ; i++) {
      const probe = await attempt(sale.id, `outage-${sale.id}-probe-${i}`);
      probes.push(probe);
      if (probe.status !== 503) break;
      // A liveness bound (the Worker reconnects on its next call), far above any machine's delay.
      expect(performance.now() - upAt, "service did not resume").toBeLessThan(60_000);
      await sleep(100);
    }
    const resumedAfterMs = Math.round(performance.now() - upAt);
    expect(probes.at(-1)?.status).toBe(202);

    // Everyone turned away with a 503 tries again; the sale sells out.
    const refusedUsers = [...spike, ...more].filter((o) => o.status === 503).map((o) => o.user);
    const retries = await Promise.all(refusedUsers.map((u) => attempt(sale.id, u)));
    const all = [...spike, ...more, ...probes, ...retries];
    for (const o of all) expectAllowed(o);
    expect(retries.filter((o) => o.status === 202).length).toBeGreaterThan(0);

    // Every 202 is a reservation in Redis under its user, and each user got at most one.
    const accepted = new Map<string, string>();
    for (const o of all.filter((x) => x.status === 202)) {
      expect(accepted.has(o.user), `${o.user} was accepted twice`).toBe(false);
      accepted.set(o.user, o.orderId as string);
    }
    // Each buyer's hold: "<units>:<latest order id>".
    const holds = Object.entries(await mergedHash(redis, sale.id, "buyers"));
    for (const [, hold] of holds) expect(hold).toMatch(/^1:[1-9][0-9]+$/);
    // Redis keeps internal ids; the buyers were given public ones.
    const ids = orderIdCipher(stack.secrets.ORDER_ID_KEY);
    const buyers = new Map(holds.map(([user, hold]) => [user, ids.toPublic(hold.slice(2))]));
    for (const [user, orderId] of accepted) expect(buyers.get(user)).toBe(orderId);
    // A reservation without a 202 can only hide behind a 503 (the script ran, its answer was
    // lost with the connection): such a user is told ALREADY_PURCHASED when trying again.
    const answered503 = new Set(all.filter((o) => o.status === 503).map((o) => o.user));
    const ghosts = [...buyers.keys()].filter((u) => !accepted.has(u));
    for (const user of ghosts) expect(answered503.has(user), `${user} holds an order nobody was told about`).toBe(true);
    expect(buyers.size).toBe(STOCK);

    // All of them settle exactly once: the consumer, and the re-drive for records whose
    // outbox clear failed while Redis was down.
    const report = await stack.drain(sale.id, buyers.size);
    const rows = await stack.settledOrders(sale.id);
    expect(rows.length).toBe(buyers.size);
    expect(new Map(rows.map((r) => [r.userId, r.orderId]))).toEqual(buyers);
    expect(report.redis.remaining).toBe(0);
    expect(report.redis.reserved).toBe(STOCK);
    expect(report.d1).toMatchObject({ confirmed: STOCK, failed: 0, soldCounter: STOCK });
    expect(report.oversold).toBe(0);
    expect(report.reconciled).toBe(true);

    // The Worker logged each fail-closed refusal, and never an unhandled error.
    expect(workerLogs.filter((l) => l.message.includes("checkout: redis unavailable")).length).toBeGreaterThan(100);
    expect(workerLogs.filter((l) => l.level === "error")).toEqual([]);

    const count = (list: Outcome[], status: number) => list.filter((o) => o.status === status).length;
    console.log(
      `outage: ${whileDown.length} checkouts while down, all 503 in <= ${Math.round(Math.max(...whileDown.map((o) => o.ms)))} ms ` +
        `(a trivial request took up to ${Math.round(delayMs)} ms meanwhile); ` +
        `resumed ${resumedAfterMs} ms after restart; spike 202/409/503 = ${count(spike, 202)}/${count(spike, 409)}/${count(spike, 503)}; ` +
        `retries 202/409/503 = ${count(retries, 202)}/${count(retries, 409)}/${count(retries, 503)}; reservations behind a 503: ${ghosts.length}`,
    );
  });
});
