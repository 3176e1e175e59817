import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  env,
  SELF,
  waitOnExecutionContext,
} from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import type { FunnelSeries } from "../../src/shared/api-types";
import { traceIdOf } from "../../src/shared/trace";
import {
  api,
  BASE,
  bearer,
  checkout,
  createSale,
  eventually,
  internalId,
  loopbackApi,
  userToken,
  waitForConfirmed,
} from "./helpers";

// The funnel as the console reads it back: data points written where each step happens, read
// through GET /admin/sales/:saleId/funnel from the local Analytics Engine stand-in
// (test/setup/global-setup.ts), which runs the route's SQL as written.

const inMs = (ms: number) => new Date(Date.now() + ms).toISOString();
const admin = { ...bearer(env.ADMIN_TOKEN), "Content-Type": "application/json" };

/** The sale's funnel totals once they reach `expected` (data points arrive after the answers that wrote them). */
async function funnelReaching(saleId: string, expected: Partial<FunnelSeries["totals"]>): Promise<FunnelSeries> {
  let last: FunnelSeries | undefined;
  return eventually(
    () => `the funnel of sale ${saleId} to reach ${JSON.stringify(expected)} (last: ${JSON.stringify(last?.totals)})`,
    async () => {
      const read = await api.saleFunnel(saleId);
      if (!read.body) throw new Error(`the funnel: ${read.status} ${read.code}`);
      last = read.body;
      return Object.entries(expected).every(([step, n]) => last?.totals[step as keyof FunnelSeries["totals"]] === n) && last;
    },
    30_000,
  );
}

interface Reserved {
  orderId: string;
  token: string;
}

async function reserve(saleId: string, userId: string): Promise<Reserved> {
  const token = await userToken(userId);
  const res = await checkout(saleId, token);
  expect(res.status).toBe(202);
  return { orderId: ((await res.json()) as { orderId: string }).orderId, token };
}

/** Every JSON line the Worker writes to the console from now on, parsed, as it comes. */
function captureLogs(): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  for (const level of ["log", "warn", "error"] as const) {
    vi.spyOn(console, level).mockImplementation((line: unknown) => {
      if (typeof line === "string" && line.startsWith("{")) lines.push(JSON.parse(line) as Record<string, unknown>);
    });
  }
  return lines;
}
afterEach(() => vi.restoreAllMocks());

describe("the funnel in Analytics Engine", () => {
  it("counts every order step where it happens: reserved, settled, paid, cancelled, expired, returned, failed, and a quiet turn-away", async () => {
    const sale = await createSale({ stock: 10, price: 500, currency: "EUR", paymentWindowSec: 600 });
    const reserved = await Promise.all(["f-paid", "f-cancel", "f-expire", "f-wait"].map((u) => reserve(sale.id, u)));
    const [paid, cancelled, expired] = reserved as [Reserved, Reserved, Reserved];
    await waitForConfirmed(reserved.map((o) => o.orderId));
    expect((await loopbackApi.pay(paid.orderId, paid.token, "tok_visa", "pay-1")).status).toBe(200);
    expect((await api.cancel(cancelled.orderId, cancelled.token)).status).toBe(200);
    // The expired order's window closes now by D1's clock; the cron's sweep expires it and returns its unit.
    await env.DB.prepare("UPDATE orders SET expires_at = CAST(unixepoch('subsec') * 1000 AS INTEGER) WHERE order_id = ?")
      .bind(internalId(expired.orderId))
      .run();
    await worker.scheduled(createScheduledController(), env);
    // An order whose queue sends fail (FAULT INJECTION: send throws) stays in the outbox; its
    // dead letter records it failed and returns its unit.
    const failingQueue = { send: () => Promise.reject(new Error("Queue send failed (injected)")) } as unknown as Queue;
    const ctx = createExecutionContext();
    const lost = await worker.fetch(
      new Request(`${BASE}/api/sales/${sale.id}/checkout`, { method: "POST", headers: bearer(await userToken("f-fail")) }),
      { ...env, ORDERS: failingQueue },
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(lost.status).toBe(202);
    const failed = internalId(((await lost.json()) as { orderId: string }).orderId);
    const letter = {
      orderId: failed,
      saleId: sale.id,
      userId: "f-fail",
      quantity: 1,
      variant: "default",
      reservedAt: Date.now(),
    };
    await worker.queue(
      createMessageBatch("flash-sale-orders-dlq", [
        { id: `dead-${failed}`, timestamp: new Date(), attempts: 1, body: { orders: [letter], reason: "injected" } },
      ]),
      env,
    );
    // A denied caller is refused as a person would be (SOLD_OUT), and counted as turned away.
    const rule = await SELF.fetch(`${BASE}/admin/deny-rules`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ kind: "user", value: "f-bot" }),
    });
    expect(rule.status).toBe(201);
    expect((await checkout(sale.id, await userToken("f-bot"))).status).toBe(409);

    const funnel = await funnelReaching(sale.id, {
      reserved: 5,
      settled: 4,
      paid: 1,
      cancelled: 1,
      expired: 1,
      returned: 3,
      failed: 1,
      turned_away: 1,
    });
    expect(funnel.totals).toMatchObject({ joined: 0, admitted: 0 });
    // Per second: every point's counts add up to the totals.
    const summed = funnel.points.reduce((n, p) => n + p.counts.reserved, 0);
    expect(summed).toBe(5);
    expect(funnel.points.every((p) => p.at >= funnel.from && p.at <= funnel.to)).toBe(true);
    await SELF.fetch(`${BASE}/admin/deny-rules/${((await rule.json()) as { id: string }).id}`, {
      method: "DELETE",
      headers: admin,
    });
  });

  it("counts a waiting room's joins, quiet joiners and admissions (passes given, quiet places not)", async () => {
    const sale = await createSale({
      stock: 5,
      startsAt: inMs(1_500),
      endsAt: inMs(3_600_000),
      queue: { mode: "fifo", prequeueSec: 600, admitPerSec: 50, passTtlSec: 120 },
    });
    const buyers = ["q1", "q2", "q3"];
    for (const userId of buyers) expect((await api.joinWaitingRoom(sale.id, await userToken(userId))).status).toBe(200);
    // A denied caller joins quietly: a place that never comes up, counted as turned away.
    const rule = await SELF.fetch(`${BASE}/admin/deny-rules`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ kind: "user", value: "q-bot" }),
    });
    expect((await api.joinWaitingRoom(sale.id, await userToken("q-bot"))).status).toBe(200);
    // Joining again is the same place: no second count.
    expect((await api.joinWaitingRoom(sale.id, await userToken("q1"))).status).toBe(200);
    // Once the sale starts, a read of the line's progress admits them.
    const funnel = await eventually(
      "the waiting room's joiners to be admitted",
      async () => {
        await new Promise((r) => setTimeout(r, 300));
        const stats = await SELF.fetch(`${BASE}/admin/sales/${sale.id}/queue`, { headers: admin });
        const { admitted } = (await stats.json()) as { admitted: number };
        return admitted === buyers.length + 1 && (await funnelReaching(sale.id, { joined: 4, turned_away: 1, admitted: 3 }));
      },
      60_000,
    );
    expect(funnel.totals).toMatchObject({ joined: 4, turned_away: 1, admitted: 3 });
    await SELF.fetch(`${BASE}/admin/deny-rules/${((await rule.json()) as { id: string }).id}`, {
      method: "DELETE",
      headers: admin,
    });
  });

  it("answers 503 ANALYTICS_UNAVAILABLE where neither the SQL API nor a stand-in is configured", async () => {
    const sale = await createSale();
    const res = await worker.fetch(
      new Request(`${BASE}/admin/sales/${sale.id}/funnel`, { headers: bearer(env.ADMIN_TOKEN) }),
      { ...env, ANALYTICS_STAND_IN_URL: "" },
      { waitUntil: () => undefined, passThroughOnException: () => undefined, props: {} } as unknown as ExecutionContext,
    );
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ error: { code: "ANALYTICS_UNAVAILABLE" } });
  });
});

describe("one order followed end to end", () => {
  it("keeps the request's traceparent in its log line, its queue message and its settled row", async () => {
    const sale = await createSale({ stock: 3 });
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const lines = captureLogs();
    const res = await checkout(sale.id, await userToken("traced"), {
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` },
    });
    expect(res.status).toBe(202);
    const { orderId } = (await res.json()) as { orderId: string };
    const id = internalId(orderId);
    await waitForConfirmed([orderId]);
    // The consumer's line comes once D1 has committed: it read the traceparent from the queue message.
    const settledLine = await eventually(
      "the settlement's line",
      async () => lines.find((l) => l.message === "settlement: order settled" && l.orderId === id),
      30_000,
    );
    const traceparent = settledLine.traceparent as string;
    // The trace continued, with a span of the Worker's own under the caller's.
    expect(traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
    expect(traceparent).not.toBe(`00-${traceId}-00f067aa0ba902b7-01`);
    expect(settledLine.traceId).toBe(traceId);
    // The request's own line carries the trace id.
    expect(lines.find((l) => l.message === "checkout: order reserved" && l.orderId === id)).toMatchObject({
      level: "info",
      traceId,
      saleId: sale.id,
    });
    // The settled row keeps it, and the admin's order detail shows it.
    const row = await env.DB.prepare("SELECT traceparent FROM orders WHERE order_id = ?").bind(id).first();
    expect(row).toEqual({ traceparent });
    expect((await api.orderDetail(orderId)).body).toMatchObject({ traceparent });
  });

  it("starts a trace of its own for a request without one, or with one the spec says to ignore", async () => {
    const sale = await createSale({ stock: 3 });
    for (const [user, header] of [
      ["untraced", undefined],
      ["zeros", "00-00000000000000000000000000000000-00f067aa0ba902b7-01"],
    ] as const) {
      const res = await checkout(sale.id, await userToken(user), header ? { headers: { traceparent: header } } : {});
      expect(res.status).toBe(202);
      const { orderId } = (await res.json()) as { orderId: string };
      await waitForConfirmed([orderId]);
      const { traceparent } = (await api.orderDetail(orderId)).body as { traceparent: string };
      expect(traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      expect(traceIdOf(traceparent)).not.toBe("00000000000000000000000000000000");
    }
  });
});
