// Order events to the shop's endpoints, through the real routes, triggers, D1 and the
// delivery code inside workerd. The Worker's state-changing calls run with queues that drop
// every message (FAULT INJECTION: a lost queue message cannot be caused locally), so nothing
// but the test sends events, and each event must come from the outbox alone: this is also
// "a crash between the state change and the send loses nothing". The endpoints are reached
// through a receiver function handed to the sender (FAULT INJECTION: the Worker cannot reach a
// server of this test; the receiver verifies each request as a shop would, with the
// specification's library, and plays down, 500, 200 or 410).
import { createExecutionContext, createMessageBatch, env, waitOnExecutionContext } from "cloudflare:test";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { orderIdCipher } from "../../dev/lib/order-ids";
import worker from "../../src/index";
import { deliverDue, RETRY_SCHEDULE_SEC, reportEndedSales } from "../../src/orders/event-deliveries";
import type { OrderView } from "../../src/shared/api-types";
import type { JobMessage, OrderMessage } from "../../src/shared/messages";
import { type DeliveryPage, type DeliveryView, type EndpointView, ORDER_EVENT_TYPES } from "../../src/shared/order-events";
import { checkedFetch } from "./contract";
import { api, BASE, createSale, internalId, LOOPBACK_BASE } from "./helpers";

/** The order ids the bodies carry, as the Worker keys them. */
const cipher = orderIdCipher(env.ORDER_ID_KEY as string);

const dropping = { send: async () => {}, sendBatch: async () => {} } as unknown as Queue;
/** The suite's env with both queues dropping what they are sent: no event is sent but by the test. */
const quiet: Env = { ...env, ORDERS: dropping, JOBS: dropping };

async function call(path: string, init: RequestInit = {}, { runEnv = quiet, base = BASE } = {}): Promise<Response> {
  return checkedFetch(
    async (req) => {
      const ctx = createExecutionContext();
      const res = await worker.fetch(req, runEnv, ctx);
      await waitOnExecutionContext(ctx);
      return res;
    },
    `${base}${path}`,
    init,
  );
}

const adminHeaders = { Authorization: `Bearer ${env.ADMIN_TOKEN}`, "Content-Type": "application/json" };
const adminPost = (path: string, body?: unknown) =>
  call(path, { method: "POST", headers: adminHeaders, body: body === undefined ? undefined : JSON.stringify(body) });

async function addEndpoint(url: string, events: readonly string[] = ORDER_EVENT_TYPES): Promise<EndpointView> {
  const res = await adminPost("/admin/webhooks", { url, events });
  expect(res.status).toBe(201);
  return (await res.json()) as EndpointView;
}

interface Received {
  url: string;
  id: string;
  type: string;
  subject: string;
  body: { id: string; type: string; createdAt: string; data: { order?: OrderView; sale?: { saleId: string } } };
}

/** A shop's receiver: verifies each request with its endpoint's secret, records it, answers what `answer` says. */
function receiver(secrets: Map<string, string>, answer: (url: string) => number | "down" = () => 200) {
  const received: Received[] = [];
  const fetcher = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = String(input);
    const how = answer(url);
    if (how === "down") throw new TypeError("connection refused");
    const payload = String(init?.body);
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const secret = secrets.get(url);
    if (secret !== undefined) {
      const body = new Webhook(secret).verify(payload, headers) as Received["body"];
      const subject = body.data.order?.orderId ?? `sale:${body.data.sale?.saleId}`;
      if (how >= 200 && how < 300) received.push({ url, id: headers["webhook-id"] as string, type: body.type, subject, body });
    }
    return new Response(null, { status: how });
  }) as typeof fetch;
  return { received, fetcher };
}

/** Checkout through the Worker (its settlement message dropped), then settle the orders by hand. */
async function buyAndSettle(saleId: string, users: string[]): Promise<string[]> {
  const orders: OrderMessage[] = [];
  for (const user of users) {
    const res = await call(`/api/sales/${saleId}/checkout`, {
      method: "POST",
      headers: { Authorization: `Bearer ${await api.userToken(user)}` },
    });
    expect(res.status).toBe(202);
    const { orderId } = (await res.json()) as { orderId: string };
    // The queue carries the internal id; the API and the events, the public one.
    orders.push({ orderId: internalId(orderId), saleId, userId: user, quantity: 1, variant: "default", reservedAt: Date.now() });
  }
  const batch = createMessageBatch("flash-sale-orders", [
    { id: `settle-${crypto.randomUUID()}`, timestamp: new Date(), attempts: 1, body: { orders } },
  ]);
  await worker.queue(batch, quiet);
  return orders.map((o) => cipher.toPublic(o.orderId));
}

async function pay(orderId: string, user: string, key: string) {
  return call(
    `/api/orders/${orderId}/pay`,
    {
      method: "POST",
      headers: {
        Authorization: `Bearer ${await api.userToken(user)}`,
        "Content-Type": "application/json",
        "Idempotency-Key": key,
      },
      body: JSON.stringify({ paymentToken: "tok_visa" }),
    },
    { base: LOOPBACK_BASE }, // the dev provider acts on a loopback Host only
  );
}

async function cancel(orderId: string, user: string) {
  return call(`/api/orders/${orderId}/cancel`, {
    method: "POST",
    headers: { Authorization: `Bearer ${await api.userToken(user)}` },
  });
}

/** The payment window closes (D1's deadline moved to the past), then the expiry job runs. */
async function expire(publicOrderId: string): Promise<void> {
  const orderId = internalId(publicOrderId);
  await env.DB.prepare("UPDATE orders SET expires_at = 0 WHERE order_id = ?").bind(orderId).run();
  const job: JobMessage = { kind: "expire-orders", orderIds: [orderId] };
  await worker.queue(
    createMessageBatch("flash-sale-jobs", [{ id: `expire-${orderId}`, timestamp: new Date(), attempts: 1, body: job }]),
    quiet,
  );
}

/** Time passes: every pending delivery of these endpoints falls due. */
async function fastForward(endpointIds: string[]): Promise<void> {
  await env.DB.prepare(
    "UPDATE event_deliveries SET next_attempt_at = 0 WHERE status = 'pending' AND endpoint_id IN (SELECT value FROM json_each(?))",
  )
    .bind(JSON.stringify(endpointIds))
    .run();
}

async function deliveries(endpointId: string): Promise<DeliveryView[]> {
  const res = await call(`/admin/webhooks/${endpointId}/deliveries`, { headers: adminHeaders });
  expect(res.status).toBe(200);
  return ((await res.json()) as DeliveryPage).deliveries;
}

const typesBySubject = (received: Received[], url: string) => {
  const bySubject = new Map<string, string[]>();
  for (const r of received.filter((r) => r.url === url)) bySubject.set(r.subject, [...(bySubject.get(r.subject) ?? []), r.type]);
  return Object.fromEntries(bySubject);
};

describe("order events", () => {
  it("sends each state change once to every endpoint subscribed to it, signed, in order per order; nothing for refused changes", async () => {
    const all = await addEndpoint("https://all.shop.example/events");
    const paidOnly = await addEndpoint("https://paid.shop.example/events", ["order.paid"]);
    const off = await addEndpoint("https://off.shop.example/events");
    const patched = await call(`/admin/webhooks/${off.id}`, {
      method: "PATCH",
      headers: adminHeaders,
      body: JSON.stringify({ enabled: false }),
    });
    expect(await patched.json()).toMatchObject({ enabled: false });

    const sale = await createSale({ stock: 3, price: 500, paymentWindowSec: 600 });
    const [o1, o2, o3] = (await buyAndSettle(sale.id, ["ev-ann", "ev-bob", "ev-cid"])) as [string, string, string];
    expect((await pay(o1, "ev-ann", "k1")).status).toBe(200);
    expect((await pay(o1, "ev-ann", "k2")).status).toBe(409); // already paid: refused, no event
    expect((await cancel(o2, "ev-bob")).status).toBe(200);
    expect((await cancel(o2, "ev-bob")).status).toBe(409); // refused
    await expire(o3);
    await expire(o3); // nothing left to expire
    expect((await cancel(o3, "ev-cid")).status).toBe(409);
    expect((await adminPost(`/admin/sales/${sale.id}/cancel`)).status).toBe(200); // the paid order is cancelled, its refund due

    const secrets = new Map([all, paidOnly, off].map((e) => [e.url, e.secret as string]));
    const { received, fetcher } = receiver(secrets);
    // Two senders at once, as two queue consumers may be: still once each, still in order.
    await Promise.all([deliverDue(env.DB, { fetch: fetcher, ids: cipher }), deliverDue(env.DB, { fetch: fetcher, ids: cipher })]);
    await deliverDue(env.DB, { fetch: fetcher, ids: cipher });

    const mine = received.filter((r) => [o1, o2, o3, `sale:${sale.id}`].includes(r.subject));
    expect(typesBySubject(mine, all.url)).toEqual({
      [o1]: ["order.reserved", "order.awaiting_payment", "order.paid", "order.cancelled", "order.refund_due"],
      [o2]: ["order.reserved", "order.awaiting_payment", "order.cancelled"],
      [o3]: ["order.reserved", "order.awaiting_payment", "order.expired"],
      [`sale:${sale.id}`]: ["sale.sold_out", "sale.ended"],
    });
    expect(typesBySubject(mine, paidOnly.url)).toEqual({ [o1]: ["order.paid"] });
    expect(typesBySubject(mine, off.url)).toEqual({});
    // Once per endpoint by webhook-id; the same event has the same id at every endpoint.
    const ids = mine.filter((r) => r.url === all.url).map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
    const paidEvent = mine.find((r) => r.url === all.url && r.type === "order.paid");
    expect(mine.find((r) => r.url === paidOnly.url)?.id).toBe(paidEvent?.id);
    // The body: the order as GET /api/orders/:orderId showed it then.
    expect(paidEvent?.body).toEqual({
      id: paidEvent?.id,
      type: "order.paid",
      createdAt: expect.any(String),
      data: {
        order: {
          orderId: o1,
          reference: expect.stringMatching(/^[0-9A-Z]{4}-[0-9A-Z]{4}$/),
          saleId: sale.id,
          saleName: sale.name,
          variantLabel: null,
          userId: "ev-ann",
          status: "paid",
          quantity: 1,
          variant: "default",
          amount: 500,
          currency: "USD",
          expiresAt: null,
          refundDue: false,
          failureReason: null,
        },
      },
    });
    expect((await deliveries(all.id)).filter((d) => d.subject === o1).map((d) => [d.type, d.status, d.attempts])).toEqual([
      ["order.refund_due", "delivered", 1],
      ["order.cancelled", "delivered", 1],
      ["order.paid", "delivered", 1],
      ["order.awaiting_payment", "delivered", 1],
      ["order.reserved", "delivered", 1],
    ]);
  });

  it("keeps every event through an endpoint that is down, then answers 500, then 200, with the same ids", async () => {
    const shop = await addEndpoint("https://flaky.shop.example/events", [
      "order.reserved",
      "order.awaiting_payment",
      "order.paid",
    ]);
    const sale = await createSale({ stock: 5, paymentWindowSec: 600 });
    const orderIds = await buyAndSettle(sale.id, ["fl-1", "fl-2"]);
    expect((await pay(orderIds[0] as string, "fl-1", "k")).status).toBe(200);

    let phase: number | "down" = "down";
    const attemptsSeen: { id: string; subject: string }[] = [];
    const secrets = new Map([[shop.url, shop.secret as string]]);
    const { received, fetcher } = receiver(secrets, (url) => (url === shop.url ? phase : 200));
    const counting = (async (input: RequestInfo | URL, init?: RequestInit) => {
      if (String(input) === shop.url) {
        const body = JSON.parse(String(init?.body)) as Received["body"];
        attemptsSeen.push({
          id: new Headers(init?.headers).get("webhook-id") as string,
          subject: body.data.order?.orderId as string,
        });
      }
      return fetcher(input, init);
    }) as typeof fetch;

    await deliverDue(env.DB, { fetch: counting, ids: cipher });
    // Down: only the first event of each order was tried; the next waits behind it.
    expect(attemptsSeen.map((a) => a.subject).sort()).toEqual([...orderIds].sort());
    await deliverDue(env.DB, { fetch: counting, ids: cipher });
    expect(attemptsSeen).toHaveLength(2); // not due again before its backoff
    const firstIds = attemptsSeen.map((a) => a.id);

    phase = 500;
    await fastForward([shop.id]);
    await deliverDue(env.DB, { fetch: counting, ids: cipher });
    expect(
      attemptsSeen
        .slice(2)
        .map((a) => a.id)
        .sort(),
    ).toEqual([...firstIds].sort()); // retries keep their id
    const pending = (await deliveries(shop.id)).filter((d) => d.status === "pending");
    expect(pending.map((d) => d.lastStatus)).toContain(500);

    phase = 200;
    await fastForward([shop.id]);
    await deliverDue(env.DB, { fetch: counting, ids: cipher });
    expect(typesBySubject(received, shop.url)).toEqual({
      [orderIds[0] as string]: ["order.reserved", "order.awaiting_payment", "order.paid"],
      [orderIds[1] as string]: ["order.reserved", "order.awaiting_payment"],
    });
    expect(
      received
        .filter((r) => r.type === "order.reserved")
        .map((r) => r.id)
        .sort(),
    ).toEqual([...firstIds].sort());
    const all = await deliveries(shop.id);
    expect(all.every((d) => d.status === "delivered")).toBe(true);
    expect(all.filter((d) => d.type === "order.reserved").map((d) => d.attempts)).toEqual([3, 3]);
    // Each attempt is readable: when, and what the endpoint answered (nothing while it was down).
    for (const d of all.filter((d) => d.type === "order.reserved")) {
      expect(d.attemptLog.map((a) => a.answer)).toEqual([null, 500, 200]);
      expect(d.attemptLog[0]?.error).toBeTruthy();
      expect(d.attemptLog.map((a) => Date.parse(a.at))).toEqual([...d.attemptLog.map((a) => Date.parse(a.at))].sort());
    }
    const attempts = await env.DB.prepare(
      "SELECT a.status_code FROM delivery_attempts a JOIN event_deliveries d ON d.id = a.delivery_id WHERE d.endpoint_id = ? ORDER BY a.rowid",
    )
      .bind(shop.id)
      .all<{ status_code: number | null }>();
    expect(attempts.results.map((a) => a.status_code)).toEqual([null, null, 500, 500, 200, 200, 200, 200, 200]);

    // The admin replays one: sent again with the same webhook-id.
    const replayed = all.find((d) => d.type === "order.paid") as DeliveryView;
    const replay = await adminPost(`/admin/webhooks/${shop.id}/deliveries/${replayed.id}/replay`);
    expect(replay.status).toBe(202);
    expect(await replay.json()).toMatchObject({ id: replayed.id, status: "pending", attempts: 0, attemptLog: [{ answer: 200 }] });
    await deliverDue(env.DB, { fetch: counting, ids: cipher });
    expect(received.filter((r) => r.type === "order.paid").map((r) => r.id)).toEqual([replayed.eventId, replayed.eventId]);
    // The attempts before the replay stay in its log.
    const resent = (await deliveries(shop.id)).find((d) => d.id === replayed.id);
    expect(resent).toMatchObject({ status: "delivered", attempts: 1 });
    expect(resent?.attemptLog.map((a) => a.answer)).toEqual([200, 200]);
  });

  it("fails a delivery after its retries (about a day) and disables an endpoint that answers 410", async () => {
    expect(RETRY_SCHEDULE_SEC.reduce((a, b) => a + b, 0)).toBeGreaterThan(20 * 3600);
    const tired = await addEndpoint("https://tired.shop.example/events", ["order.reserved"]);
    const gone = await addEndpoint("https://gone.shop.example/events", ["order.reserved"]);
    const sale = await createSale({ stock: 5 });
    await buyAndSettle(sale.id, ["t-1"]);
    // Its last retry: every earlier one of the schedule was spent.
    await env.DB.prepare("UPDATE event_deliveries SET attempts = ? WHERE endpoint_id = ?")
      .bind(RETRY_SCHEDULE_SEC.length, tired.id)
      .run();
    const secrets = new Map([tired, gone].map((e) => [e.url, e.secret as string]));
    const { fetcher } = receiver(secrets, (url) => (url === tired.url ? 500 : url === gone.url ? 410 : 200));
    await deliverDue(env.DB, { fetch: fetcher, ids: cipher });

    expect((await deliveries(tired.id)).map((d) => [d.status, d.lastStatus, d.nextAttemptAt])).toEqual([["failed", 500, null]]);
    expect((await deliveries(gone.id)).map((d) => [d.status, d.lastStatus])).toEqual([["failed", 410]]);
    const listed = (await (await call("/admin/webhooks", { headers: adminHeaders })).json()) as { endpoints: EndpointView[] };
    expect(listed.endpoints.find((e) => e.id === gone.id)).toMatchObject({
      enabled: false,
      disabledReason: expect.stringContaining("410"),
    });
    expect(listed.endpoints.every((e) => e.secret === undefined)).toBe(true); // the secret is shown once only
  });

  it("raises sale.ended once when a sale's window closes", async () => {
    const sale = await createSale({ stock: 2 });
    const ended = () =>
      env.DB.prepare("SELECT COUNT(*) AS n FROM order_events WHERE subject = ? AND type = 'sale.ended'")
        .bind(`sale:${sale.id}`)
        .first<{ n: number }>();
    await reportEndedSales(env.DB);
    expect((await ended())?.n).toBe(0);
    // Its window closes (moved to the past in D1), then the cron's step runs twice.
    await env.DB.prepare("UPDATE sales SET ends_at = ? WHERE id = ?")
      .bind(Date.now() - 1000, Number(sale.id))
      .run();
    await reportEndedSales(env.DB);
    await reportEndedSales(env.DB);
    expect((await ended())?.n).toBe(1);
  });

  it("holds a disabled endpoint's deliveries and sends them once it is enabled again", async () => {
    const paused = await addEndpoint("https://paused.shop.example/events", ["order.reserved"]);
    const sale = await createSale({ stock: 2 });
    const [orderId] = await buyAndSettle(sale.id, ["pz-1"]);
    // The jobs queue records what it is asked (nothing sends it on: the test sends).
    const asked: JobMessage[] = [];
    const recording = { send: async (m: JobMessage) => void asked.push(m), sendBatch: async () => {} } as unknown as Queue;
    const patch = (enabled: boolean) =>
      call(
        `/admin/webhooks/${paused.id}`,
        { method: "PATCH", headers: adminHeaders, body: JSON.stringify({ enabled }) },
        { runEnv: { ...quiet, JOBS: recording } },
      );
    expect((await patch(false)).status).toBe(200);
    expect(asked).toEqual([]);
    const { received, fetcher } = receiver(new Map([[paused.url, paused.secret as string]]));
    await deliverDue(env.DB, { fetch: fetcher, ids: cipher });
    expect(received.filter((r) => r.url === paused.url)).toEqual([]);
    // Enabled again, the jobs queue is asked at once to send what waited (not at the cron's next run).
    expect((await patch(true)).status).toBe(200);
    expect(asked).toEqual([{ kind: "deliver-order-events" }]);
    await deliverDue(env.DB, { fetch: fetcher, ids: cipher });
    expect(received.filter((r) => r.url === paused.url).map((r) => r.subject)).toEqual([orderId]);
  });
});

describe("a sender that dies mid-send", () => {
  it("loses nothing: what it held is sent once its lease runs out, by the next sender, with the same id", async () => {
    const shop = await addEndpoint("https://lease.shop.example/events", ["order.reserved"]);
    const sale = await createSale({ stock: 2 });
    const [orderId] = await buyAndSettle(sale.id, ["lease-1"]);
    // FAULT INJECTION: an isolate dying between taking its deliveries and recording the
    // attempt cannot be caused here; its lease is written as a sender writes it, a minute on.
    await env.DB.prepare("UPDATE event_deliveries SET lease_until = ? WHERE endpoint_id = ? AND status = 'pending'")
      .bind(Date.now() + 60_000, shop.id)
      .run();
    const { received, fetcher } = receiver(new Map([[shop.url, shop.secret as string]]));
    await deliverDue(env.DB, { fetch: fetcher, ids: cipher });
    expect(received.filter((r) => r.url === shop.url)).toEqual([]); // still held by the dead sender
    const [held] = await deliveries(shop.id);
    expect(held).toMatchObject({ status: "pending", attempts: 0, attemptLog: [] });

    // Its lease runs out (moved to the past): the next sender takes it and sends it.
    await env.DB.prepare("UPDATE event_deliveries SET lease_until = ? WHERE endpoint_id = ?")
      .bind(Date.now() - 1, shop.id)
      .run();
    await deliverDue(env.DB, { fetch: fetcher, ids: cipher });
    const sent = received.filter((r) => r.url === shop.url);
    expect(sent.map((r) => [r.subject, r.id])).toEqual([[orderId, held?.eventId]]);
    expect((await deliveries(shop.id))[0]).toMatchObject({ status: "delivered", attempts: 1 });
  });
});

describe("the endpoints' admin API", () => {
  it("needs the admin token", async () => {
    expect((await call("/admin/webhooks")).status).toBe(401);
    const res = await call("/admin/webhooks", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ url: "https://shop.example/e", events: ["order.paid"] }),
    });
    expect(res.status).toBe(401);
  });

  it.each([
    "http://shop.example/events",
    "https://10.1.2.3/events",
    "https://192.168.0.10/events",
    "https://172.20.0.1/events",
    "https://169.254.169.254/latest",
    "https://127.0.0.1/events",
    "https://localhost/events",
    "https://[::1]/events",
    "https://[fe80::1]/events",
    "https://[fd00::1]/events",
    "https://user:pass@shop.example/events",
    "not a url",
  ])("refuses the endpoint url %s and records nothing", async (url) => {
    const before = await env.DB.prepare("SELECT COUNT(*) AS n FROM event_endpoints").first<{ n: number }>();
    const res = await adminPost("/admin/webhooks", { url, events: ["order.paid"] });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: "BAD_REQUEST", message: expect.stringContaining("url") } });
    const after = await env.DB.prepare("SELECT COUNT(*) AS n FROM event_endpoints").first<{ n: number }>();
    expect(after?.n).toBe(before?.n);
  });

  it("refuses unknown event types, and rotates a secret that the next delivery is signed with", async () => {
    expect((await adminPost("/admin/webhooks", { url: "https://shop.example/e", events: ["order.shipped"] })).status).toBe(400);
    const endpoint = await addEndpoint("https://rotate.shop.example/events", ["order.reserved"]);
    const rotated = await adminPost(`/admin/webhooks/${endpoint.id}/rotate-secret`);
    expect(rotated.status).toBe(200);
    const { secret } = (await rotated.json()) as EndpointView;
    expect(secret).toMatch(/^whsec_/);
    expect(secret).not.toBe(endpoint.secret);
    const sale = await createSale({ stock: 2 });
    const [orderId] = await buyAndSettle(sale.id, ["rot-1"]);
    const { received, fetcher } = receiver(new Map([[endpoint.url, secret as string]]));
    await deliverDue(env.DB, { fetch: fetcher, ids: cipher }); // verify() throws on the old secret's signature
    expect(received.filter((r) => r.url === endpoint.url).map((r) => r.subject)).toEqual([orderId]);
    expect(
      (await call("/admin/webhooks/ep_000000000000000000000000/rotate-secret", { method: "POST", headers: adminHeaders })).status,
    ).toBe(404);
  });
});
