// Running a drop against the real stack (the Worker on Miniflare, local D1 and Queues, a real
// redis-server behind the project's Upstash gateway): admission that follows the stock through
// no-shows, and the console while Redis is frozen for real (SIGSTOP of its redis-server).
// Outcomes are asserted, not speeds: a sale sells out while the no-shows' passes are still
// valid (before their time could have freed a unit), whatever the machine's pace.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../../dev/lib/wait.ts";
import { type Stack, startStack, waitForDrain } from "../../dev/stack/local-stack.ts";
import { type DropOptions, runDrop } from "../../load/runner/drop.ts";
import { saleViolations } from "../../load/runner/invariants.ts";
import { acceptedSamples } from "../../load/runner/waiting-room-crowd.ts";

/**
 * A pass unused 8 s after it was given is a no-show (the deployment's default is 30 s): well
 * past a buyer's poll and think time here, and short, so a rehearsal's rounds of no-shows
 * (each a grace apart) take seconds. The passes last far longer either way.
 */
const GRACE_SEC = 8;
const PASS_TTL_SEC = 300;

let stack: Stack;

beforeAll(async () => {
  // The crowd comes from one client: no per-user limit here. Redis frozen answers within 2 s.
  stack = await startStack({
    vars: { USER_RATE_LIMIT: "0", REDIS_TIMEOUT_MS: "2000", QUEUE_NO_SHOW_GRACE_SEC: String(GRACE_SEC) },
  });
});
afterAll(async () => {
  await stack?.stop();
});

/** A drop of 300-second passes whose people wait that long at most and buy within seconds when they do. */
const drop = (options: Pick<DropOptions, "people" | "stock" | "admitPerSec"> & Partial<DropOptions>) =>
  runDrop(stack.api, {
    bots: 0,
    noShowShare: 0,
    patienceMs: [PASS_TTL_SEC * 1000, PASS_TTL_SEC * 1000],
    thinkMs: [500, 3_000],
    passTtlSec: PASS_TTL_SEC,
    ...options,
  });

/** Every unit sold once to a buyer of its own, settled exactly once. */
async function expectInvariants(saleId: string, stock: number, accepted: Map<string, string>) {
  const report = await waitForDrain(stack.api, saleId, accepted.size, 120_000);
  const settled = await stack.settledOrders(saleId);
  expect(saleViolations({ stock, samples: acceptedSamples(accepted), report, settled })).toEqual([]);
}

describe("admission that follows the stock", () => {
  it("sells a FIFO sale of 10 units whose first 10 places never buy, before their passes could have run out", async () => {
    const result = await drop({ people: 110, stock: 10, firstPlacesNoShow: 10, admitPerSec: 2 });
    console.log(`first 10 no-shows: sold out ${(result.sellOutMs ?? Number.NaN) / 1000} s after the start`);
    // Sold out, every unit to someone who bought in their own turn: the no-shows' units went on
    // after their grace, while their 300-second passes still held (without the no-show rule
    // nothing sells until then: 10 units held by people who never come).
    expect(result.sellOutMs).not.toBeNull();
    expect(result).toMatchObject({ peopleUnits: 10, noShows: 10, botPassAbuses: 0 });
    expect(result.failures.size).toBe(0);
    const view = await stack.api.queueStats(result.saleId);
    expect(view.noShows).toBeGreaterThanOrEqual(10);
    expect(view.passesExpired).toBe(0); // no pass had run out: the units came back as no-shows
    await expectInvariants(result.saleId, 10, result.accepted);
  });

  it("sells out through 40% no-shows, with a wait estimated for those let in and its error measured", async () => {
    const result = await drop({ people: 40, bots: 4, stock: 8, noShowShare: 0.4, seed: 7, admitPerSec: 4 });
    console.log(
      `40% no-shows: sold out ${(result.sellOutMs ?? Number.NaN) / 1000} s after the start; wait error p50 ${result.estimateError.median} s, p90 ${result.estimateError.p90} s over ${result.estimateError.count} estimates`,
    );
    expect(result.sellOutMs).not.toBeNull();
    // Sold out before any pass ran out (an outcome, not a clock): no-shows' units came back by the rule.
    expect((await stack.api.queueStats(result.saleId)).passesExpired).toBe(0);
    expect(result.peopleUnits + result.botUnits).toBe(8);
    expect(result.botPassAbuses).toBe(0);
    expect(result.noShows).toBeGreaterThan(0);
    expect(result.measuredNoShowShare).toBeGreaterThan(0);
    expect(result.estimateError.count).toBeGreaterThan(0);
    expect(result.failures.size).toBe(0);
    await expectInvariants(result.saleId, 8, result.accepted);
  });
});

describe("the console while Redis is frozen", () => {
  const freeze = () => process.kill(stack.redis.pid, "SIGSTOP");
  const thaw = () => process.kill(stack.redis.pid, "SIGCONT");

  it("lists orders and takes a pause, which stops admission once Redis is back, with no second request; a wrong token is refused", async () => {
    const { api } = stack;
    const sale = await api.createSale({
      stock: 100,
      queue: { mode: "fifo", prequeueSec: 3_600, admitPerSec: 1, passTtlSec: 300 },
    });
    const tokens = await Promise.all(Array.from({ length: 30 }, (_, i) => api.userToken(`frozen-${sale.id}-${i}`)));
    const tickets: string[] = [];
    for (const token of tokens) {
      const joined = await api.joinWaitingRoom(sale.id, token);
      tickets.push(joined.body?.ticket as string);
    }
    freeze();
    try {
      // D1's order list, with the right token: no Redis in the way.
      expect((await api.saleOrders(sale.id)).orders).toEqual([]);
      // A wrong token is counted in Redis, which cannot say: refused.
      const wrong = await stack.worker.fetch(`/admin/sales/${sale.id}/orders`, {
        headers: { Authorization: `Bearer ${"w".repeat(40)}` },
      });
      expect(wrong.status).toBe(503);
      const paused = await api.holdAdmission(sale.id, "pause", "One moment: your place is kept.");
      expect(paused.status).toBe(200);
      expect(paused.body).toMatchObject({ paused: true, syncPending: true, admitted: null });
    } finally {
      thaw();
    }
    // Nobody sends anything again: the pause reaches Redis by itself, and the line stops.
    const held = await eventually(
      "the pause in force",
      async () => {
        await new Promise((r) => setTimeout(r, 1_000));
        const view = await api.queueStats(sale.id).catch(() => undefined);
        return view && !view.syncPending && view;
      },
      120_000,
    );
    expect(held.paused).toBe(true);
    const last = tokens.length - 1;
    const position = await api.pollQueue(sale.id, tokens[last] as string, tickets[last] as string);
    expect(position.body).toMatchObject({ state: "paused", notice: "One moment: your place is kept." });
    const before = (await api.queueStats(sale.id)).admitted;
    await new Promise((r) => setTimeout(r, 3_000));
    expect((await api.queueStats(sale.id)).admitted).toBe(before);
  });
});
