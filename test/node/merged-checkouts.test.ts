// Buyers of one sale who arrive together share one script call per round trip inside the
// isolate. Here Redis is really paused (CLIENT PAUSE) so a crowd piles up behind the call in
// flight, and clients hang up while they wait, the one whose request sent that call among
// them. Everything is real: the Worker on Miniflare, the gateway, redis-server, D1, Queues.
// Waiters do no I/O of their own while the leader's call is in flight: workerd cancels such
// a request as hung unless it holds a timer, and a response built where another request
// resumed it is foreign I/O. This test fails on either (500s, or answers that never come).
// Local workerd keeps running a request whose client hung up (Cloudflare cancels it), so
// the waitUntil that guards a hung-up leader in production is not exercised here.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandStats } from "../../dev/lib/redis-stats.ts";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";
import { drive, planCrowd } from "../../load/runner/crowd.ts";

const STOCK = 150;
const USERS = 300;
const DOUBLE_CLICKERS = 30; // the first users also send a second attempt at once
const PAUSE_MS = 800;
const HANG_UP_AFTER_MS = 250;

let stack: Stack;
let redis: Redis;

beforeAll(async () => {
  stack = await startStack({ vars: { OUTBOX_REDRIVE_AFTER_MS: "500" } });
  redis = new Redis(stack.redis.url);
});
afterAll(async () => {
  redis?.disconnect();
  await stack?.stop();
});

async function scriptCalls(): Promise<number> {
  const stats = await commandStats(redis);
  return (stats.get("evalsha")?.calls ?? 0) + (stats.get("eval")?.calls ?? 0);
}

type Outcome = { user: string; hungUp: boolean; status?: number; code?: string; orderId?: string };

describe("checkouts merged while Redis is slow", () => {
  it("serves the crowd in a few calls, survives hang-ups, and settles every reservation once", async () => {
    const sale = await stack.api.createSale({ stock: STOCK, name: "merged" });
    const users = Array.from({ length: USERS }, (_, i) => `merged-${sale.id}-${i}`);
    const tokens = new Map(await Promise.all(users.map(async (u) => [u, await stack.api.userToken(u)] as const)));
    const attempts = [...users, ...users.slice(0, DOUBLE_CLICKERS)];
    const callsBefore = await scriptCalls();

    await redis.call("CLIENT", "PAUSE", String(PAUSE_MS), "ALL");
    const outcomes = await Promise.all(
      attempts.map(async (user, i): Promise<Outcome> => {
        // The first ten requests (the one that sends the first call among them) and every
        // seventh after them hang up while waiting.
        const hangUp = i < 10 || i % 7 === 0;
        const abort = new AbortController();
        if (hangUp) setTimeout(() => abort.abort(), HANG_UP_AFTER_MS);
        try {
          const res = await stack.api.checkoutResponse(sale.id, tokens.get(user) as string, { signal: abort.signal });
          const body = (await res.json()) as { orderId?: string; error?: { code: string } };
          return { user, hungUp: false, status: res.status, code: body.error?.code, orderId: body.orderId };
        } catch (err) {
          if (!abort.signal.aborted) throw err;
          return { user, hungUp: true };
        }
      }),
    );

    const answered = outcomes.filter((o) => !o.hungUp);
    const hungUp = outcomes.length - answered.length;
    expect(hungUp).toBeGreaterThan(40); // the hang-ups really happened mid-wait
    // Everyone who stayed got a real answer: no 5xx, no timeouts, no hung requests.
    for (const o of answered) {
      if (o.status === 202) expect(o.orderId).toMatch(/^[1-9][0-9]+$/);
      else expect({ status: o.status, code: o.code }).toMatchObject({ status: 409 });
    }
    const promised = new Map<string, string>();
    for (const o of answered.filter((a) => a.status === 202)) {
      expect(promised.has(o.user), `${o.user} was accepted twice`).toBe(false);
      promised.set(o.user, o.orderId as string);
    }

    // The crowd took a handful of script calls, not one per attempt.
    expect((await scriptCalls()) - callsBefore).toBeLessThan(attempts.length / 10);

    // Every reservation settles exactly once, including those of buyers who hung up: through
    // the queue, or the re-drive of the outbox when their request ended before the send.
    const report = await stack.drain(sale.id, STOCK);
    expect(report.oversold).toBe(0);
    expect(report.reconciled).toBe(true);
    expect(report.redis.reserved).toBe(STOCK); // 300 buyers for 150 units: it sold out
    expect(report.d1.confirmed).toBe(STOCK);
    const rows = await stack.settledOrders(sale.id);
    expect(rows).toHaveLength(STOCK);
    expect(new Set(rows.map((r) => r.userId)).size).toBe(STOCK);
    const settled = new Map(rows.map((r) => [r.userId, r.orderId]));
    for (const [user, orderId] of promised) expect(settled.get(user), user).toBe(orderId);
  });

  it("keeps every answer its own under a sustained crowd, where leaders lead long after their own response", async () => {
    const total = 3_000;
    const inFlight = 200;
    const sale = await stack.api.createSale({ stock: total, name: "sustained" });
    const shots = await planCrowd(stack.api, total, 1, `sustained-${sale.id}-`);
    const { samples } = await drive(shots, (shot) => stack.api.checkout(sale.id, shot.token), {
      concurrency: inFlight,
    });
    expect(samples.filter((s) => s.status !== 202)).toEqual([]);
    const promised = new Map(samples.map((s) => [s.userId, s.orderId]));
    expect(new Set(promised.values()).size).toBe(total); // no two buyers were handed the same order
    const report = await stack.drain(sale.id, total);
    expect(report.d1.confirmed).toBe(total);
    expect(report.oversold).toBe(0);
    expect(report.reconciled).toBe(true);
    // Each buyer's answer named the very order D1 settled for that buyer, once.
    const settled = await stack.settledOrders(sale.id);
    expect(settled).toHaveLength(total);
    expect(new Map(settled.map((r) => [r.userId, r.orderId]))).toEqual(promised);
  });
});
