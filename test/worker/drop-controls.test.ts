// A drop's live controls through the Worker (workerd, local D1 and Queues, a real redis-server
// behind the project's Upstash gateway): admission held with every place kept, the rate changed
// live, a live sale put behind the waiting room, the notice on every page, each logged; and a
// change made while the Worker cannot reach Redis, which reaches it by itself. Redis frozen for
// real under the console: test/node/drop-operations.test.ts.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { redisFor } from "../../src/redis/client";
import { pushLaggingSales } from "../../src/sales/sync-upkeep";
import type { QueuePosition, QueueStats } from "../../src/shared/api-types";
import { saleKeys } from "../../src/shared/keys";
import {
  api,
  bearer,
  createSale,
  eventually,
  fetchWithVars,
  freshAddress,
  type InLine,
  joinInOrder,
  redis,
  userToken,
} from "./helpers";

async function poll(saleId: string, waiter: InLine): Promise<QueuePosition> {
  const res = await api.pollQueue(saleId, waiter.token, waiter.ticket);
  if (!res.body) throw new Error(`poll: ${res.status} ${res.code}`);
  return res.body;
}

/** A live fifo sale whose line moves as fast as it may, unless `admitPerSec` says otherwise. */
const liveQueuedSale = (stock: number, admitPerSec = 100_000) =>
  createSale({ stock, queue: { mode: "fifo", prequeueSec: 3_600, admitPerSec, passTtlSec: 300 } });

const ok = <T>(res: { status: number; body?: T; code?: string }): T => {
  expect(res.status, res.code).toBe(200);
  return res.body as T;
};

describe("holding admission", () => {
  it("keeps every place and lets nobody in while held; waiters see paused and the message; resuming lets them in in order", async () => {
    const sale = await liveQueuedSale(10);
    const held = ok(await api.holdAdmission(sale.id, "pause", "Checkout is catching up: your place is kept."));
    expect(held).toMatchObject({ paused: true, notice: "Checkout is catching up: your place is kept.", syncPending: false });
    const waiters = await joinInOrder(sale.id, ["hold-a", "hold-b", "hold-c", "hold-d"]);
    for (const [i, waiter] of waiters.entries()) {
      expect(await poll(sale.id, waiter)).toMatchObject({
        place: i + 1,
        admittedThrough: 0,
        state: "paused",
        estimatedWaitSec: null,
        notice: "Checkout is catching up: your place is kept.",
        pass: null,
      });
    }
    // A second pause changes nothing more, and is not logged twice.
    ok(await api.holdAdmission(sale.id, "pause", "Checkout is catching up: your place is kept."));
    const view = await api.queueStats(sale.id);
    expect(view).toMatchObject({ joined: 4, admitted: 0, waiting: 4, paused: true });
    expect(view.actions.map((a) => a.action)).toEqual(["pause-admission"]);
    expect(view.actions[0]?.admin).toBeTruthy();

    const resumed = ok(await api.holdAdmission(sale.id, "resume"));
    expect(resumed).toMatchObject({ paused: false, admitted: 4 });
    const first = waiters[0] as InLine;
    expect(await poll(sale.id, first)).toMatchObject({ state: "admitted", place: 1 });
    expect((await api.queueStats(sale.id)).actions.map((a) => a.action)).toEqual(["resume-admission", "pause-admission"]);
  });

  it("is refused for a sale without a waiting room", async () => {
    const sale = await createSale();
    expect((await api.holdAdmission(sale.id, "pause")).code).toBe("QUEUE_OFF");
    expect((await api.setAdmitRate(sale.id, 5)).code).toBe("QUEUE_OFF");
  });
});

describe("the rate, changed live", () => {
  it("applies from the line's next move: the answer already shows it, and every isolate's next look", async () => {
    const sale = await liveQueuedSale(100, 1);
    const waiters = await joinInOrder(
      sale.id,
      Array.from({ length: 12 }, (_, i) => `rate-${sale.id}-${i}`),
    );
    const before = await api.queueStats(sale.id);
    expect(before.admitted).toBeLessThan(12);
    const after = ok(await api.setAdmitRate(sale.id, 1_000));
    // The answer's look at the line was its first at the new rate: everyone is in.
    expect(after).toMatchObject({ queue: { admitPerSec: 1_000 }, admitted: 12 });
    expect(after.actions[0]).toMatchObject({ action: "admission-rate", admitPerSec: 1_000 });
    // Another isolate (its own progress copy) sees it once its copy is older than a second.
    const last = waiters[11] as InLine;
    const elsewhere = await eventually("the last place admitted as another isolate sees it", async () => {
      await new Promise((r) => setTimeout(r, 300));
      const res = await fetchWithVars({}, `/api/sales/${sale.id}/queue`, {
        headers: { ...bearer(last.token), "Queue-Ticket": last.ticket },
      });
      const body = (await res.json()) as QueuePosition;
      return body.state === "admitted" && body;
    });
    expect(elsewhere.place).toBe(12);
    expect((await api.sale(sale.id)).queue.admitPerSec).toBe(1_000);
  });

  it("refuses a rate outside 1 to 100,000 a second", async () => {
    const sale = await liveQueuedSale(10);
    expect((await api.setAdmitRate(sale.id, 0)).code).toBe("BAD_REQUEST");
    expect((await api.setAdmitRate(sale.id, 100_001)).code).toBe("BAD_REQUEST");
  });
});

describe("putting a live sale behind the waiting room", () => {
  it("asks for a pass from then on: buyers join first come first served and buy on their turn", async () => {
    const sale = await createSale({ stock: 5 });
    expect((await api.checkout(sale.id, await userToken(`early-${sale.id}`))).status).toBe(202);
    const enabled = ok(await api.enableWaitingRoom(sale.id));
    expect(enabled).toMatchObject({ queue: { mode: "fifo" }, syncPending: false });
    expect(enabled.actions[0]?.action).toBe("queue-enabled");
    // The same request again is answered the sale as it is.
    expect(ok(await api.enableWaitingRoom(sale.id)).actions).toHaveLength(1);
    expect((await api.sale(sale.id)).queue.mode).toBe("fifo");

    const late = await userToken(`late-${sale.id}`);
    await eventually(
      "checkout to ask for a pass",
      async () => (await api.checkout(sale.id, late)).code === "QUEUE_PASS_REQUIRED",
    );
    const [waiter] = await joinInOrder(sale.id, [`late-${sale.id}`]);
    const turn = await eventually("the late buyer's turn", async () => {
      await new Promise((r) => setTimeout(r, 300));
      const p = await poll(sale.id, waiter as InLine);
      return p.state === "admitted" && p;
    });
    expect(turn.place).toBe(1);
    expect((await api.checkoutWithPass(sale.id, late, turn.pass as string)).status).toBe(202);
  });

  it("is refused for a sale sold by draw, one selling by its presale lanes before its public start, a cancelled one and one that ended", async () => {
    const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();
    const drawn = await createSale({
      startsAt: inMs(3_600_000),
      endsAt: inMs(7_200_000),
      draw: { opensAt: inMs(60_000), closesAt: inMs(1_800_000) },
    });
    expect((await api.enableWaitingRoom(drawn.id)).code).toBe("DRAW_ONLY");
    const laned = await createSale({
      startsAt: inMs(3_600_000),
      endsAt: inMs(7_200_000),
      lanes: [{ name: "members", startsAt: inMs(1_800_000), stock: 3 }],
    });
    expect((await api.enableWaitingRoom(laned.id)).code).toBe("SALE_NOT_STARTED");
    expect((await api.sale(laned.id)).queue.mode).toBe("off");
    const cancelled = await createSale();
    expect((await api.setSaleState(cancelled.id, "cancel")).status).toBe(200);
    expect((await api.enableWaitingRoom(cancelled.id)).code).toBe("SALE_CANCELLED");
    const ended = await createSale({ startsAt: inMs(-60_000), endsAt: inMs(1_000) });
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await api.enableWaitingRoom(ended.id)).code).toBe("SALE_ENDED");
    expect((await api.enableWaitingRoom("9999999999")).code).toBe("SALE_NOT_FOUND");
  });
});

describe("the notice", () => {
  it("reaches the sale page and everyone waiting, and comes down with null", async () => {
    const sale = await liveQueuedSale(10);
    const [waiter] = await joinInOrder(sale.id, [`notice-${sale.id}`]);
    const shown = ok(await api.setNotice(sale.id, "Sizes EU 41 and 42 come back at 10:00."));
    expect(shown.notice).toBe("Sizes EU 41 and 42 come back at 10:00.");
    expect((await api.sale(sale.id)).notice).toBe("Sizes EU 41 and 42 come back at 10:00.");
    await eventually("the notice in the line", async () => {
      await new Promise((r) => setTimeout(r, 300));
      return (await poll(sale.id, waiter as InLine)).notice === "Sizes EU 41 and 42 come back at 10:00.";
    });
    ok(await api.setNotice(sale.id, null));
    expect((await api.sale(sale.id)).notice).toBeNull();
    const log = (await api.queueStats(sale.id)).actions;
    expect(log.map((a) => [a.action, a.message])).toEqual([
      ["notice", null],
      ["notice", "Sizes EU 41 and 42 come back at 10:00."],
    ]);
  });

  it("is one line of at most 280 characters, on any sale", async () => {
    const unqueued = await createSale();
    expect(ok(await api.setNotice(unqueued.id, "Back at noon."))).toMatchObject({ notice: "Back at noon.", joined: null });
    expect((await api.sale(unqueued.id)).notice).toBe("Back at noon.");
    expect((await api.setNotice(unqueued.id, "x".repeat(281))).code).toBe("BAD_REQUEST");
    expect((await api.setNotice(unqueued.id, "   ")).code).toBe("BAD_REQUEST");
  });
});

describe("a change Redis cannot take", () => {
  const unreachable = { UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", REDIS_TIMEOUT_MS: "1000" };

  it("is recorded, answered as pending, and reaches Redis by itself (the jobs queue)", async () => {
    const sale = await liveQueuedSale(10);
    const res = await fetchWithVars(unreachable, `/admin/sales/${sale.id}/queue/pause`, {
      method: "POST",
      headers: { ...bearer(env.ADMIN_TOKEN), "CF-Connecting-IP": freshAddress() },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ paused: true, syncPending: true, joined: null, admitted: null });
    // The Worker that answered could not reach Redis; the jobs queue's consumer can.
    await eventually("the pause in Redis", async () => {
      await new Promise((r) => setTimeout(r, 500));
      return (await redis.hget(saleKeys(sale.id).meta, "qpaused")) === "1";
    });
    expect(await api.queueStats(sale.id)).toMatchObject({ paused: true, syncPending: false });
  });

  it("is pushed by the cron when D1 holds a version Redis has not applied", async () => {
    const sale = await liveQueuedSale(10);
    // D1 ahead of Redis, as after a push that failed and a job that gave up.
    await env.DB.prepare("UPDATE sales SET notice = 'from the cron', version = version + 1 WHERE id = ?")
      .bind(Number(sale.id))
      .run();
    const ahead: QueueStats = await api.queueStats(sale.id);
    expect(ahead.syncPending).toBe(true);
    // The cron's part (src/settlement/scheduled.ts runs it every minute).
    expect(await pushLaggingSales(env.DB, redisFor(env), env.JOBS)).toContain(sale.id);
    expect(await redis.hget(saleKeys(sale.id).meta, "notice")).toBe("from the cron");
    expect((await api.queueStats(sale.id)).syncPending).toBe(false);
  });
});
