// Order events to the shop's endpoints, through the real routes, triggers, D1 and the
// delivery code inside workerd. The Worker's state-changing calls run with queues that drop
// every message (FAULT INJECTION: a lost queue message cannot be caused locally), so nothing
// but the test sends events, and each event must come from the outbox alone: this is also
// "a crash between the state change and the send loses nothing". The endpoints are reached
// through a receiver function handed to the sender (FAULT INJECTION: the Worker cannot reach a
// server of this test; the receiver verifies each request as a shop would, with the
// specification's library, and plays down, 500, 200 or 410).
import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  env,
  waitOnExecutionContext,
} from "cloudflare:test";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { orderIdCipher } from "../../dev/lib/order-ids";
import worker from "../../src/index";
import { keepEndpointSecrets } from "../../src/orders/endpoint-secrets";
import { deliverDue, RETRY_SCHEDULE_SEC, reportEndedSales } from "../../src/orders/event-deliveries";
import { SECRET_ROTATION_GRACE_MS } from "../../src/orders/event-endpoints";
import type { OrderView } from "../../src/shared/api-types";
import type { JobMessage, OrderMessage } from "../../src/shared/messages";
import { type DeliveryPage, type DeliveryView, type EndpointView, ORDER_EVENT_TYPES } from "../../src/shared/order-events";
import { orderIdCipher as workerOrderIds } from "../../src/shared/public-order-id";
import { parseSettings, settingsOf } from "../../src/shared/settings";
import { checkedFetch } from "./contract";
import { api, BASE, createSale, internalId, LOOPBACK_BASE } from "./helpers";

/** The order ids the bodies carry, as the Worker keys them. */
const cipher = orderIdCipher(env.ORDER_ID_KEY as string);
/** The Worker's own cipher of them, which a sender's run takes. */
const ids = workerOrderIds(env.ORDER_ID_KEY as string);

/** What the Worker seals endpoint secrets with: the suite's ORDER_EVENT_SECRETS_KEY. */
const SECRETS_KEY = settingsOf(env).ORDER_EVENT_SECRETS_KEY;

/** One sender's run, as the jobs queue's consumer makes it, its requests handed to `fetcher`. */
const deliver = (fetcher: typeof fetch, secretsKey = SECRETS_KEY) => deliverDue(env.DB, { fetch: fetcher, secretsKey, ids });

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

/** An endpoint no refused change may touch, made once for the file. */
const FIXED_URL = "https://fixed.shop.example/events";
let fixed: Promise<EndpointView> | undefined;
const fixedEndpoint = async (): Promise<EndpointView> => {
  fixed ??= addEndpoint(FIXED_URL, ["sale.ended"]);
  const { id } = await fixed;
  const res = await call("/admin/webhooks", { headers: adminHeaders });
  const { endpoints } = (await res.json()) as { endpoints: EndpointView[] };
  return endpoints.find((e) => e.id === id) as EndpointView;
};

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
    await Promise.all([deliver(fetcher), deliver(fetcher)]);
    await deliver(fetcher);

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

    await deliver(counting);
    // Down: only the first event of each order was tried; the next waits behind it.
    expect(attemptsSeen.map((a) => a.subject).sort()).toEqual([...orderIds].sort());
    await deliver(counting);
    expect(attemptsSeen).toHaveLength(2); // not due again before its backoff
    const firstIds = attemptsSeen.map((a) => a.id);

    phase = 500;
    await fastForward([shop.id]);
    await deliver(counting);
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
    await deliver(counting);
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
    await deliver(counting);
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
    await deliver(fetcher);

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
    await deliver(fetcher);
    expect(received.filter((r) => r.url === paused.url)).toEqual([]);
    // Enabled again, the jobs queue is asked at once to send what waited (not at the cron's next run).
    expect((await patch(true)).status).toBe(200);
    expect(asked).toEqual([{ kind: "deliver-order-events" }]);
    await deliver(fetcher);
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
    await deliver(fetcher);
    expect(received.filter((r) => r.url === shop.url)).toEqual([]); // still held by the dead sender
    const [held] = await deliveries(shop.id);
    expect(held).toMatchObject({ status: "pending", attempts: 0, attemptLog: [] });

    // Its lease runs out (moved to the past): the next sender takes it and sends it.
    await env.DB.prepare("UPDATE event_deliveries SET lease_until = ? WHERE endpoint_id = ?")
      .bind(Date.now() - 1, shop.id)
      .run();
    await deliver(fetcher);
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

  // Each refused URL, with what it is (IANA's special-purpose registries, special-use names).
  it.each([
    ["http://shop.example/events", "plain http to a public host"],
    ["https://user:pass@shop.example/events", "credentials"],
    ["not a url", "not a URL"],
    ["https://.../events", "no host left once its dots go"],
    // The trailing dot is dropped before every check.
    ["https://metadata.google.internal./computeMetadata/v1/", "a cloud's metadata service, trailing dot"],
    ["https://localhost./events", "loopback name, trailing dot"],
    ["https://127.0.0.1../events", "loopback, two trailing dots"],
    ["https://0x7f.1../events", "loopback in hex, trailing dots"],
    // IPv4, in any notation a URL accepts.
    ["https://0.0.0.0/events", "this network, 0.0.0.0/8"],
    ["https://10.1.2.3/events", "private, 10.0.0.0/8"],
    ["https://100.64.0.1/events", "shared address space (carrier NAT), 100.64.0.0/10"],
    ["https://100.127.255.254/events", "shared address space, its last block"],
    ["https://127.0.0.1/events", "loopback, 127.0.0.0/8"],
    ["https://2130706433/events", "loopback as one decimal number"],
    ["https://169.254.169.254/latest", "link-local (metadata), 169.254.0.0/16"],
    ["https://172.20.0.1/events", "private, 172.16.0.0/12"],
    ["https://192.0.0.170/events", "IETF protocol assignments, 192.0.0.0/24"],
    ["https://192.0.2.1/events", "documentation, 192.0.2.0/24"],
    ["https://192.31.196.1/events", "AS112, 192.31.196.0/24"],
    ["https://192.52.193.1/events", "AMT, 192.52.193.0/24"],
    ["https://192.88.99.1/events", "6to4 relay anycast, 192.88.99.0/24"],
    ["https://192.168.0.10/events", "private, 192.168.0.0/16"],
    ["https://192.175.48.1/events", "AS112 direct delegation, 192.175.48.0/24"],
    ["https://198.18.0.1/events", "benchmarking, 198.18.0.0/15"],
    ["https://198.19.255.255/events", "benchmarking, its last address"],
    ["https://198.51.100.7/events", "documentation, 198.51.100.0/24"],
    ["https://203.0.113.9/events", "documentation, 203.0.113.0/24"],
    ["https://224.0.0.1/events", "multicast, 224.0.0.0/4"],
    ["https://240.0.0.1/events", "reserved, 240.0.0.0/4"],
    ["https://255.255.255.255/events", "limited broadcast"],
    // IPv6, and IPv4 inside IPv6.
    ["https://[::]/events", "unspecified"],
    ["https://[::1]/events", "loopback"],
    ["https://[::7f00:1]/events", "IPv4-compatible loopback, ::/96"],
    ["https://[::127.0.0.1]/events", "IPv4-compatible loopback, dotted"],
    ["https://[::a00:1]/events", "IPv4-compatible private"],
    ["https://[::ffff:127.0.0.1]/events", "IPv4-mapped loopback, ::ffff:0:0/96"],
    ["https://[::ffff:a9fe:a9fe]/events", "IPv4-mapped link-local (metadata)"],
    ["https://[::ffff:0:a00:1]/events", "IPv4-translated, ::ffff:0:0:0/96"],
    ["https://[64:ff9b::7f00:1]/events", "NAT64, 64:ff9b::/96"],
    ["https://[64:ff9b::8.8.8.8]/events", "NAT64 of a public address"],
    ["https://[64:ff9b:1::a00:1]/events", "local-use NAT64, 64:ff9b:1::/48"],
    ["https://[100::1]/events", "discard-only, 100::/64"],
    ["https://[2001::1]/events", "Teredo, 2001::/32"],
    ["https://[2001:2::1]/events", "benchmarking, 2001:2::/48"],
    ["https://[2001:20::1]/events", "ORCHIDv2, 2001:20::/28"],
    ["https://[2001:db8::1]/events", "documentation, 2001:db8::/32"],
    ["https://[2002:7f00:1::1]/events", "6to4 of a loopback address, 2002::/16"],
    ["https://[2620:4f:8000::1]/events", "AS112, 2620:4f:8000::/48"],
    ["https://[3fff::1]/events", "documentation, 3fff::/20"],
    ["https://[5f00::1]/events", "segment routing, 5f00::/16"],
    ["https://[4000::1]/events", "outside global unicast, 2000::/3"],
    ["https://[fc00::1]/events", "unique local, fc00::/7"],
    ["https://[fd00::1]/events", "unique local"],
    ["https://[fe80::1]/events", "link-local, fe80::/10"],
    ["https://[fec0::1]/events", "deprecated site-local, fec0::/10"],
    ["https://[ff02::1]/events", "multicast, ff00::/8"],
    // Names that only mean a private network.
    ["https://localhost/events", "localhost"],
    ["https://api.localhost/events", "a subdomain of localhost"],
    ["https://printer.local/events", "mDNS, .local"],
    ["https://router.home.arpa/events", "home networks, home.arpa"],
    ["https://db.internal/events", "private use, .internal"],
    ["https://metadata/events", "a single label, completed by a local resolver"],
  ])("refuses the endpoint url %s (%s) and records nothing", async (url) => {
    const { id } = await fixedEndpoint();
    const before = await env.DB.prepare("SELECT COUNT(*) AS n FROM event_endpoints").first<{ n: number }>();
    const res = await adminPost("/admin/webhooks", { url, events: ["order.paid"] });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ error: { code: "BAD_REQUEST", message: expect.stringContaining("url") } });
    // Nor as a change of an endpoint's url.
    const patched = await call(`/admin/webhooks/${id}`, {
      method: "PATCH",
      headers: adminHeaders,
      body: JSON.stringify({ url }),
    });
    expect(patched.status).toBe(400);
    const after = await env.DB.prepare("SELECT COUNT(*) AS n FROM event_endpoints").first<{ n: number }>();
    expect(after?.n).toBe(before?.n);
    expect((await fixedEndpoint()).url).toBe(FIXED_URL);
  });

  it.each([
    ["https://shop.example/events", "a public name"],
    ["https://shop.example./events", "a public name with its trailing dot"],
    ["https://93.184.215.14/events", "a public IPv4 address"],
    ["https://[2606:4700:4700::1111]/events", "a public IPv6 address"],
    ["https://xn--bcher-kva.example/events", "an internationalised name"],
  ])("accepts the endpoint url %s (%s)", async (url) => {
    const endpoint = await addEndpoint(url, ["sale.ended"]);
    expect(endpoint.url).toBe(url);
    // Out of the way of the other tests' deliveries.
    const disabled = await call(`/admin/webhooks/${endpoint.id}`, {
      method: "PATCH",
      headers: adminHeaders,
      body: JSON.stringify({ enabled: false }),
    });
    expect(disabled.status).toBe(200);
  });

  it("refuses unknown event types", async () => {
    expect((await adminPost("/admin/webhooks", { url: "https://shop.example/e", events: ["order.shipped"] })).status).toBe(400);
  });
});

/** A shop's endpoint that takes every request (204) and keeps it as it came, to verify later with any secret. */
function recording() {
  const sent: { url: string; payload: string; headers: Record<string, string> }[] = [];
  const fetcher = (async (input: RequestInfo | URL, init?: RequestInit) => {
    sent.push({
      url: String(input),
      payload: String(init?.body),
      headers: Object.fromEntries(new Headers(init?.headers).entries()),
    });
    return new Response(null, { status: 204 });
  }) as typeof fetch;
  const to = (url: string) => sent.filter((r) => r.url === url);
  return { fetcher, to };
}

/** Whether the specification's library, given `secret`, accepts the request. */
function verifies(secret: string, request: { payload: string; headers: Record<string, string> }): boolean {
  try {
    new Webhook(secret).verify(request.payload, request.headers);
    return true;
  } catch {
    return false;
  }
}

interface StoredSecrets {
  secret: string;
  previous_secret: string | null;
  previous_secret_until: number | null;
}
const stored = (id: string) =>
  env.DB.prepare("SELECT secret, previous_secret, previous_secret_until FROM event_endpoints WHERE id = ?")
    .bind(id)
    .first<StoredSecrets>() as Promise<StoredSecrets>;

const rotate = async (id: string, runEnv = quiet) => {
  const res = await call(`/admin/webhooks/${id}/rotate-secret`, { method: "POST", headers: adminHeaders }, { runEnv });
  return { status: res.status, body: (await res.json()) as EndpointView & { error?: { code: string } } };
};

/** A Standard Webhooks secret, as the API makes them. */
const plainSecret = () => `whsec_${btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(24))))}`;

describe("endpoint signing secrets", () => {
  it("are stored sealed with ORDER_EVENT_SECRETS_KEY: no row holds one, no admin view shows one", async () => {
    const endpoint = await addEndpoint("https://sealed.shop.example/events", ["order.reserved"]);
    const secret = endpoint.secret as string;
    expect(secret).toMatch(/^whsec_/);
    expect(endpoint.previousSecretExpiresAt).toBeNull();
    const row = await stored(endpoint.id);
    expect(row.secret).toMatch(/^aes1\./);
    // The whole table, as an export would hold it: neither the secret nor its key bytes.
    const { results } = await env.DB.prepare("SELECT * FROM event_endpoints").all();
    const exported = JSON.stringify(results);
    expect(exported).not.toContain(secret);
    expect(exported).not.toContain(secret.slice("whsec_".length));
    const listed = (await (await call("/admin/webhooks", { headers: adminHeaders })).json()) as { endpoints: EndpointView[] };
    expect(JSON.stringify(listed)).not.toContain(secret);
    expect(JSON.stringify(listed)).not.toContain(row.secret);
    expect(listed.endpoints.every((e) => e.secret === undefined)).toBe(true);

    const sale = await createSale({ stock: 2 });
    const [orderId] = await buyAndSettle(sale.id, ["sealed-1"]);
    const { fetcher, to } = recording();
    await deliver(fetcher);
    const [request] = to(endpoint.url);
    expect(request && verifies(secret, request)).toBe(true);
    expect(JSON.parse(request?.payload as string)).toMatchObject({ data: { order: { orderId } } });
  });

  it("a secret that cannot be opened (no key, another key, another endpoint's row) sends nothing; the attempt says why", async () => {
    const own = await addEndpoint("https://unreadable.shop.example/events", ["order.reserved"]);
    const other = await addEndpoint("https://copied.shop.example/events", ["order.reserved"]);
    // A sealed secret copied into another endpoint's row (by whoever can write the database) does not open there.
    await env.DB.prepare("UPDATE event_endpoints SET secret = (SELECT secret FROM event_endpoints WHERE id = ?1) WHERE id = ?2")
      .bind(own.id, other.id)
      .run();
    const sale = await createSale({ stock: 2 });
    await buyAndSettle(sale.id, ["unreadable-1"]);
    const { fetcher, to } = recording();
    const anotherKey = crypto.getRandomValues(new Uint8Array(32));
    await deliverDue(env.DB, { fetch: fetcher, secretsKey: undefined, ids });
    await fastForward([own.id]);
    await deliver(fetcher, anotherKey);
    expect(to(own.url)).toEqual([]);
    const attempts = (await deliveries(own.id))[0]?.attemptLog ?? [];
    expect(attempts.map((a) => [a.answer, a.error])).toEqual([
      [null, expect.stringMatching(/signing secret cannot be read \(ORDER_EVENT_SECRETS_KEY is not set\)/)],
      [null, expect.stringMatching(/signing secret cannot be read \(it was sealed with another ORDER_EVENT_SECRETS_KEY/)],
    ]);
    await fastForward([own.id, other.id]);
    await deliver(fetcher);
    expect(to(other.url)).toEqual([]);
    expect((await deliveries(other.id)).map((d) => [d.status, d.lastError])).toEqual([
      ["pending", expect.stringContaining("for another endpoint")],
    ]);
    // With the key it was sealed with, it goes.
    expect(to(own.url).map((r) => verifies(own.secret as string, r))).toEqual([true]);
  });

  it("a new ORDER_EVENT_SECRETS_KEY opens none of the old key's secrets; a rotation under it signs again", async () => {
    const endpoint = await addEndpoint("https://rekeyed.shop.example/events", ["order.reserved"]);
    const newKey = crypto.getRandomValues(new Uint8Array(32));
    const rekeyed: Env = { ...quiet, ORDER_EVENT_SECRETS_KEY: btoa(String.fromCharCode(...newKey)) };
    const sale = await createSale({ stock: 5 });
    await buyAndSettle(sale.id, ["rekeyed-1"]);
    const { fetcher, to } = recording();
    await deliver(fetcher, newKey);
    expect(to(endpoint.url)).toEqual([]);
    // Rotated under the new key: the replaced secret (sealed with the old key) is left out, the new one signs.
    const rotated = await rotate(endpoint.id, rekeyed);
    expect(rotated.status).toBe(200);
    await fastForward([endpoint.id]);
    await deliver(fetcher, newKey);
    const [request] = to(endpoint.url);
    expect(request?.headers["webhook-signature"]?.split(" ")).toHaveLength(1);
    expect(request && verifies(rotated.body.secret as string, request)).toBe(true);
  });

  it("from before sealing (plain text) keep signing, are sealed by the cron, and a rotation keeps them sealed", async () => {
    // An endpoint as the Worker stored it before secrets were sealed.
    const id = `ep_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`;
    const url = "https://legacy.shop.example/events";
    const secret = plainSecret();
    await env.DB.prepare(
      "INSERT INTO event_endpoints (id, url, secret, events, description, created_at) VALUES (?, ?, ?, ?, '', ?)",
    )
      .bind(id, url, secret, JSON.stringify(["order.reserved"]), Date.now())
      .run();
    const sale = await createSale({ stock: 5 });
    await buyAndSettle(sale.id, ["legacy-1"]);
    const { fetcher, to } = recording();
    await deliverDue(env.DB, { fetch: fetcher, secretsKey: undefined, ids }); // a plain secret needs no key
    expect(to(url).map((r) => verifies(secret, r))).toEqual([true]);

    // The cron: without the key it seals nothing; with it, the secret is sealed, the same secret.
    const cron = (runEnv: Env) => worker.scheduled(createScheduledController(), runEnv);
    await cron({ ...quiet, ORDER_EVENT_SECRETS_KEY: "" });
    expect((await stored(id)).secret).toBe(secret);
    await cron(quiet);
    const sealed = (await stored(id)).secret;
    expect(sealed).toMatch(/^aes1\./);
    expect(await keepEndpointSecrets(env.DB, SECRETS_KEY, { endpointId: id })).toBe(0); // nothing left to seal
    await buyAndSettle(sale.id, ["legacy-2"]);
    await deliver(fetcher);
    expect(to(url).map((r) => verifies(secret, r))).toEqual([true, true]);

    // Rotated: the replaced one is kept sealed, and still signs.
    const rotated = await rotate(id);
    expect(rotated.status).toBe(200);
    expect(await stored(id)).toMatchObject({ previous_secret: sealed, secret: expect.stringMatching(/^aes1\./) });
    await buyAndSettle(sale.id, ["legacy-3"]);
    await deliver(fetcher);
    const last = to(url).at(-1) as { payload: string; headers: Record<string, string> };
    expect([verifies(secret, last), verifies(rotated.body.secret as string, last)]).toEqual([true, true]);
  });

  it(`a rotation signs with both for ${SECRET_ROTATION_GRACE_MS / 3_600_000} hours, then with the new one only; rotating twice drops the first`, async () => {
    const endpoint = await addEndpoint("https://rotating.shop.example/events", ["order.reserved"]);
    const first = endpoint.secret as string;
    const sealedFirst = (await stored(endpoint.id)).secret;
    const before = Date.now();
    const rotated = await rotate(endpoint.id);
    expect(rotated.status).toBe(200);
    const second = rotated.body.secret as string;
    expect(second).toMatch(/^whsec_/);
    expect(second).not.toBe(first);
    const until = Date.parse(rotated.body.previousSecretExpiresAt as string);
    expect(until).toBeGreaterThanOrEqual(before + SECRET_ROTATION_GRACE_MS);
    expect(until).toBeLessThanOrEqual(Date.now() + SECRET_ROTATION_GRACE_MS);
    expect(await stored(endpoint.id)).toMatchObject({ previous_secret: sealedFirst, previous_secret_until: until });
    const listed = (await (await call("/admin/webhooks", { headers: adminHeaders })).json()) as { endpoints: EndpointView[] };
    expect(listed.endpoints.find((e) => e.id === endpoint.id)).toMatchObject({
      previousSecretExpiresAt: rotated.body.previousSecretExpiresAt,
    });
    expect(listed.endpoints.find((e) => e.id === endpoint.id)?.secret).toBeUndefined();

    const sale = await createSale({ stock: 5 });
    const { fetcher, to } = recording();
    const deliveredNow = async (user: string) => {
      await buyAndSettle(sale.id, [user]);
      await deliver(fetcher);
      return to(endpoint.url).at(-1) as { payload: string; headers: Record<string, string> };
    };
    // Within the grace: two space-separated v1 values, either secret verifies.
    const during = await deliveredNow("rotating-1");
    expect(during.headers["webhook-signature"]?.split(" ").map((v) => v.slice(0, 3))).toEqual(["v1,", "v1,"]);
    expect([verifies(first, during), verifies(second, during)]).toEqual([true, true]);

    // The grace is over (moved to the past): the new secret only.
    await env.DB.prepare("UPDATE event_endpoints SET previous_secret_until = ? WHERE id = ?")
      .bind(Date.now() - 1, endpoint.id)
      .run();
    const after = await deliveredNow("rotating-2");
    expect(after.headers["webhook-signature"]?.split(" ")).toHaveLength(1);
    expect([verifies(first, after), verifies(second, after)]).toEqual([false, true]);
    // The cron's step forgets it.
    await keepEndpointSecrets(env.DB, SECRETS_KEY);
    expect(await stored(endpoint.id)).toMatchObject({ previous_secret: null, previous_secret_until: null });
    const view = (await (await call("/admin/webhooks", { headers: adminHeaders })).json()) as { endpoints: EndpointView[] };
    expect(view.endpoints.find((e) => e.id === endpoint.id)?.previousSecretExpiresAt).toBeNull();

    // Twice within the grace: the latest two sign, the first (say it leaked) no more.
    const third = (await rotate(endpoint.id)).body.secret as string;
    const fourth = (await rotate(endpoint.id)).body.secret as string;
    const twice = await deliveredNow("rotating-3");
    expect([second, third, fourth].map((s) => verifies(s, twice))).toEqual([false, true, true]);

    expect((await rotate("ep_000000000000000000000000")).status).toBe(404);
  });

  it("without ORDER_EVENT_SECRETS_KEY: no endpoint is registered nor a secret rotated (503), nothing is written", async () => {
    const endpoint = await addEndpoint("https://keyless.shop.example/events", ["order.reserved"]);
    const keyless: Env = { ...quiet, ORDER_EVENT_SECRETS_KEY: "" };
    const count = () => env.DB.prepare("SELECT COUNT(*) AS n FROM event_endpoints").first<number>("n");
    const before = await count();
    const created = await call(
      "/admin/webhooks",
      {
        method: "POST",
        headers: adminHeaders,
        body: JSON.stringify({ url: "https://keyless-2.shop.example/e", events: ["order.paid"] }),
      },
      { runEnv: keyless },
    );
    expect(created.status).toBe(503);
    expect(created.headers.get("Retry-After")).toBeTruthy();
    expect(await created.json()).toMatchObject({
      error: { code: "UNAVAILABLE", message: expect.stringContaining("ORDER_EVENT_SECRETS_KEY") },
    });
    expect(await count()).toBe(before);
    const row = await stored(endpoint.id);
    const rotated = await rotate(endpoint.id, keyless);
    expect([rotated.status, rotated.body.error?.code]).toEqual([503, "UNAVAILABLE"]);
    expect(await stored(endpoint.id)).toEqual(row);
    // A key that is not 32 bytes of base64 is refused by name, as every setting that does not parse.
    expect(() => parseSettings({ ...env, ORDER_EVENT_SECRETS_KEY: btoa("sixteen bytes!!!") })).toThrow(
      /ORDER_EVENT_SECRETS_KEY must be/,
    );
    expect(() => parseSettings({ ...env, ORDER_EVENT_SECRETS_KEY: "not base64" })).toThrow(/ORDER_EVENT_SECRETS_KEY must be/);
  });
});
