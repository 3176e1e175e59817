// The API's document against the app: the same routes, and real answers (success and the
// usual refusals) that match what it says. Every other test's calls through `api` are
// checked against it too (helpers.ts).
import { env, SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { webhookSignature } from "../../dev/lib/webhook-signing";
import document from "../../public/openapi.json";
import { app } from "../../src/app";
import { ROUTE_DOCS } from "../../src/routes/api.docs";
import { saleKeys } from "../../src/shared/keys";
import { checkedFetch, seen } from "./contract";
import {
  BASE,
  bearer,
  createSale,
  eventually,
  fetchWithVars,
  LOOPBACK_BASE,
  redis,
  userToken,
  waitForConfirmed,
} from "./helpers";

const call = (path: string, init?: RequestInit) => checkedFetch((req) => SELF.fetch(req), `${BASE}${path}`, init);
const admin = (extra: Record<string, string> = {}) => ({
  ...bearer(env.ADMIN_TOKEN),
  "Content-Type": "application/json",
  ...extra,
});
const json = (body: unknown) => ({ method: "POST", body: JSON.stringify(body), headers: { "Content-Type": "application/json" } });
const LAB = { LAB_ENABLED: "true" };

describe("the OpenAPI document", () => {
  it("documents exactly the routes the app mounts", () => {
    const mounted = app.routes.filter((r) => r.method !== "ALL").map((r) => `${r.method.toLowerCase()} ${r.path}`);
    const documented = ROUTE_DOCS.map((route) => `${route.method} ${route.path}`);
    expect(new Set(mounted)).toEqual(new Set(documented));
    expect(new Set(documented).size).toBe(documented.length); // each route documented once
  });

  it("matches real answers of every route, successes and refusals", async () => {
    await call("/healthz");
    await call("/api/config");
    await call("/api/dev/login", json({ userId: "contract" })); // 404: DEV_LOGIN is off
    await fetchWithVars({ DEV_LOGIN: "true" }, "/api/dev/login", json({ userId: "contract" }), LOOPBACK_BASE);
    await fetchWithVars({ DEV_LOGIN: "true" }, "/api/dev/login", json({ userId: "" }), LOOPBACK_BASE);

    const created = await call("/admin/sales", {
      method: "POST",
      headers: admin({ "Idempotency-Key": `contract-${crypto.randomUUID()}` }),
      body: JSON.stringify({
        name: "contract",
        stock: 1,
        startsAt: new Date(Date.now() - 1000).toISOString(),
        endsAt: new Date(Date.now() + 60_000).toISOString(),
      }),
    });
    expect(created.status).toBe(201);
    const sale = (await created.json()) as { id: string };
    await call("/admin/sales", { method: "POST", headers: admin(), body: "{}" });
    await call("/admin/sales", { method: "POST", headers: admin(), body: JSON.stringify({ name: "x".repeat(20_000) }) });
    await call("/admin/sales", { method: "POST", headers: { "Content-Type": "application/json" }, body: "{}" });
    await call("/admin/sales", { method: "POST", headers: admin({ Origin: "https://shop.example" }), body: "{}" });

    await call(`/api/sales/${sale.id}`);
    await call("/api/sales/987654321987");
    await call("/api/sales/x");

    const buyer = bearer(await userToken("contract-buyer"));
    const accepted = await call(`/api/sales/${sale.id}/checkout`, { method: "POST", headers: buyer });
    expect(accepted.status).toBe(202);
    const { orderId } = (await accepted.json()) as { orderId: string };
    await call(`/api/sales/${sale.id}/checkout`, { method: "POST", headers: buyer }); // 409 ALREADY_PURCHASED
    await call(`/api/sales/${sale.id}/checkout`, { method: "POST" });
    await call(`/api/sales/${sale.id}/checkout`, { method: "POST", headers: buyer, body: "[]" });
    await call("/api/sales/987654321987/checkout", { method: "POST", headers: buyer });
    const throttled = await createSale({ admission: { rate: 1, burst: 1 } });
    const first = await call(`/api/sales/${throttled.id}/checkout`, { method: "POST", headers: bearer(await userToken("c-1")) });
    await call(`/api/sales/${throttled.id}/checkout`, { method: "POST", headers: bearer(await userToken("c-2")) }); // 429

    // The waiting room: join, poll, a pass's refusals and its checkout.
    const queued = await createSale({ queue: { mode: "fifo", admitPerSec: 1000 } });
    const queuer = bearer(await userToken("c-queuer"));
    await call(`/api/sales/${queued.id}/queue`, { method: "POST", headers: queuer });
    const joined = (await (await call(`/api/sales/${queued.id}/queue`, { method: "POST", headers: queuer })).json()) as {
      ticket: string;
    };
    await call(`/api/sales/${sale.id}/queue`, { method: "POST", headers: queuer }); // 409 QUEUE_OFF
    await call(`/api/sales/${queued.id}/queue`, { headers: queuer }); // 400: no ticket
    await call(`/api/sales/${queued.id}/queue`, { headers: { ...buyer, "Queue-Ticket": joined.ticket } }); // 403
    const position = (await (
      await call(`/api/sales/${queued.id}/queue`, { headers: { ...queuer, "Queue-Ticket": joined.ticket } })
    ).json()) as { pass: string };
    await call(`/api/sales/${queued.id}/checkout`, { method: "POST", headers: queuer }); // 403 QUEUE_PASS_REQUIRED
    await call(`/api/sales/${queued.id}/checkout`, { method: "POST", headers: { ...queuer, "Queue-Pass": position.pass } });
    await call(`/admin/sales/${queued.id}/queue`, { headers: admin() });
    await call(`/admin/sales/${sale.id}/queue`, { headers: admin() }); // 409 QUEUE_OFF
    await call(`/admin/sales/${queued.id}/queue/places`, { headers: admin() });
    await call(`/admin/sales/${queued.id}/queue/places?from=0`, { headers: admin() }); // 400
    // A drop's live controls, each answering the queue view.
    const control = (path: string, method: string, body?: unknown) =>
      call(`/admin/sales/${queued.id}/${path}`, {
        method,
        headers: admin(),
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
    await control("queue", "PATCH", { admitPerSec: 500 });
    await control("queue", "PATCH", { admitPerSec: 0 }); // 400
    await control("queue/pause", "POST", { message: "Checkout is catching up: your place is kept." });
    await control("queue/resume", "POST");
    await control("queue/enable", "POST"); // queued already: answered as it is
    await call(`/admin/sales/${sale.id}/queue/pause`, { method: "POST", headers: admin() }); // 409 QUEUE_OFF
    await control("notice", "PUT", { message: "Sizes EU 41 and 42 come back at 10:00." });
    await control("notice", "PUT", { message: "x".repeat(281) }); // 400
    // A random waiting room's draw: pending until the sale is over (cancelled here), then published.
    const random = await createSale({
      startsAt: new Date(Date.now() + 60_000).toISOString(),
      queue: { mode: "random", prequeueSec: 600 },
    });
    await call(`/api/sales/${random.id}/queue`, { method: "POST", headers: queuer });
    await call(`/api/sales/${random.id}/queue/draw`);
    await call(`/api/sales/${random.id}/queue/draw/places`); // 409 QUEUE_DRAW_PENDING
    await call(`/api/sales/${queued.id}/queue/draw`); // 409 QUEUE_NOT_RANDOM
    await call(`/api/sales/${random.id}/queue/draw?lane=nobody`); // 404 LANE_NOT_FOUND
    await call(`/admin/sales/${random.id}/cancel`, { method: "POST", headers: admin() });
    await eventually("the pre-queue's publication", async () => {
      const res = await SELF.fetch(`${BASE}/api/sales/${random.id}/queue/draw`);
      return ((await res.json()) as { state: string }).state === "ready";
    });
    await call(`/api/sales/${random.id}/queue/draw/places`);
    await call(`/api/sales/${random.id}/queue/draw/places?cursor=x`); // 400

    await waitForConfirmed([orderId, ((await first.json()) as { orderId: string }).orderId]);
    await call(`/api/orders/${orderId}`, { headers: buyer });
    await call(`/api/orders/${orderId}`, { headers: bearer(await userToken("someone-else")) });
    await call(`/api/orders/${orderId}`);
    await call("/api/orders", { headers: buyer });
    await call("/api/orders?cursor=x", { headers: buyer });
    await call("/api/orders");
    await call(`/admin/sales/${sale.id}/orders?status=confirmed&limit=10`, { headers: admin() });
    await call(`/admin/sales/${sale.id}/orders?limit=0`, { headers: admin() });
    await call("/admin/sales/987654321987/orders", { headers: admin() });
    await call(`/admin/sales/${sale.id}/orders`);
    await (await call(`/admin/sales/${sale.id}/orders.csv`, { headers: admin() })).text();
    await call(`/admin/sales/${sale.id}/orders.csv?status=x`, { headers: admin() });
    await call("/admin/sales/987654321987/orders.csv", { headers: admin() });
    await call(`/admin/orders/${orderId}`, { headers: admin() });
    await call("/admin/orders/1234", { headers: admin() });
    await call("/admin/orders/x", { headers: admin() });
    await call("/api/orders/0x1", { headers: buyer });

    // After the 202: pay, cancel, and a provider's webhook.
    const paying = await createSale({ stock: 3, price: 250, paymentWindowSec: 600 });
    const buyOne = async (user: string) => {
      const res = await call(`/api/sales/${paying.id}/checkout`, {
        ...json({ quantity: 1 }),
        headers: { ...bearer(await userToken(user)), "Content-Type": "application/json" },
      });
      return ((await res.json()) as { orderId: string }).orderId;
    };
    const [toPay, toCancel, toHook] = [await buyOne("c-payer"), await buyOne("c-canceller"), await buyOne("c-hooked")];
    await waitForConfirmed([toPay, toCancel, toHook]);
    const payer = await userToken("c-payer");
    const pay = (key: string | undefined, paymentToken: string, base = LOOPBACK_BASE) =>
      checkedFetch((req) => SELF.fetch(req), `${base}/api/orders/${toPay}/pay`, {
        method: "POST",
        headers: { Authorization: `Bearer ${payer}`, "Content-Type": "application/json", ...(key && { "Idempotency-Key": key }) },
        body: JSON.stringify({ paymentToken }),
      });
    await pay("c-0", "tok_visa", BASE); // 503: the dev provider acts on a loopback Host only
    await pay(undefined, "tok_visa"); // 400
    await pay("c-1", "tok_chargeDeclined"); // 402
    await pay("c-1", "tok_visa"); // 422
    await pay("c-2", "tok_visa"); // 200
    await pay("c-3", "tok_visa"); // 409
    const canceller = bearer(await userToken("c-canceller"));
    await call(`/api/orders/${toCancel}/cancel`, { method: "POST", headers: canceller }); // 200
    await call(`/api/orders/${toCancel}/cancel`, { method: "POST", headers: canceller }); // 409
    await call(`/api/orders/${toCancel}/cancel`, { method: "POST" }); // 401
    const event = JSON.stringify({
      id: `evt_${toHook}`,
      type: "payment.succeeded",
      orderId: toHook,
      amount: 250,
      currency: "USD",
    });
    const signature = await webhookSignature(env.PAYMENT_WEBHOOK_SECRET as string, event);
    const hook = (body: string, sig: string) =>
      call("/webhooks/payments", {
        method: "POST",
        headers: { "Content-Type": "application/json", "Webhook-Signature": sig },
        body,
      });
    await hook(event, signature); // 200
    await hook(event, "t=1,v1=00"); // 401
    await hook("{}", await webhookSignature(env.PAYMENT_WEBHOOK_SECRET as string, "{}")); // 400

    // The catalog, and a sale's operations.
    await call("/api/sales");
    await call("/api/sales?cursor=not-ours");
    const patch = (id: string, body: unknown, extra: Record<string, string> = {}) =>
      call(`/admin/sales/${id}`, { method: "PATCH", headers: admin(extra), body: JSON.stringify(body) });
    expect((await patch(sale.id, { description: "contract", stock: 2 })).status).toBe(200);
    await patch(sale.id, { stock: 1 }); // 409 STOCK_DECREASE
    await patch(sale.id, { name: "again" }, { "If-Match": '"1"' }); // 412
    await patch(sale.id, {}); // 400
    await patch("987654321987", { name: "none" }); // 404
    for (const action of ["pause", "resume", "cancel", "pause"]) {
      await call(`/admin/sales/${sale.id}/${action}`, { method: "POST", headers: admin() }); // 200, 200, 200, 409
    }
    await call(`/admin/sales/987654321987/cancel`, { method: "POST", headers: admin() });
    const lost = await createSale();
    await call(`/admin/sales/${lost.id}/restore`, { method: "POST", headers: admin() }); // 409 SALE_LOADED
    await redis.del(saleKeys(lost.id).meta);
    const restored = await fetchWithVars({ RESTORE_QUIET_MS: "0" }, `/admin/sales/${lost.id}/restore`, {
      method: "POST",
      headers: admin(),
    });
    expect(restored.status).toBe(200);

    // The cron's run: the local stack's route (404 in a deployment).
    await fetchWithVars({ LOOPBACK_HOSTS_ONLY: "true" }, "/admin/scheduled", { method: "POST", headers: admin() }, LOOPBACK_BASE);
    await call("/admin/scheduled", { method: "POST", headers: admin() }); // 404

    for (const what of ["report", "stats"]) {
      await call(`/admin/sales/${sale.id}/${what}`, { headers: admin() });
      await call(`/admin/sales/987654321987/${what}`, { headers: admin() });
      await call(`/admin/sales/x/${what}`, { headers: admin() });
      await call(`/admin/sales/${sale.id}/${what}`);
    }

    const rule = await call("/admin/deny-rules", { ...json({ kind: "user", value: "contract-bot" }), headers: admin() });
    await call("/admin/deny-rules", { ...json({ kind: "robot", value: "x" }), headers: admin() }); // 400
    await call("/admin/deny-rules", { headers: admin() });
    await call("/admin/deny-rules"); // 401
    const { id: ruleId } = (await rule.json()) as { id: string };
    await call(`/admin/deny-rules/${ruleId}`, { method: "DELETE", headers: admin() });
    await call(`/admin/deny-rules/${ruleId}`, { method: "DELETE", headers: admin() }); // 404

    await call("/lab/sales", { method: "POST", headers: admin(), body: "{}" }); // 404: the lab is off
    const lab = await fetchWithVars(LAB, "/lab/sales", { method: "POST", headers: admin(), body: JSON.stringify({ stock: 2 }) });
    const { id: labId } = (await lab.json()) as { id: string };
    await fetchWithVars(LAB, "/lab/sales", { method: "POST", headers: admin(), body: JSON.stringify({ stock: 0 }) });
    await fetchWithVars(LAB, `/lab/atomic/sales/${labId}/checkout`, { method: "POST", headers: buyer });
    await fetchWithVars(LAB, `/lab/atomic/sales/${labId}/checkout`, { method: "POST", headers: buyer }); // 409
    await fetchWithVars(LAB, `/lab/nope/sales/${labId}/checkout`, { method: "POST", headers: buyer });
    await fetchWithVars(LAB, `/lab/sales/${labId}/report`, { headers: admin() });
    // The waiting room's push channel, tried in the lab: one event (the pass already used), then the end.
    const stream = await fetchWithVars(LAB, `/lab/sales/${queued.id}/queue/stream`, {
      headers: { ...queuer, "Queue-Ticket": joined.ticket },
    });
    expect(stream.headers.get("Content-Type")).toBe("text/event-stream");
    expect(await stream.text()).toMatch(/^data: \{.*"state":"closed".*\}\n\n$/);
    await fetchWithVars(LAB, `/lab/sales/${queued.id}/queue/stream`, { headers: queuer }); // 400: no ticket
    const experiment = { page: "sale", scenario: "warm", saleId: sale.id, views: 3 };
    await fetchWithVars(LAB, "/lab/read-path", { method: "POST", headers: admin(), body: JSON.stringify(experiment) });
    await fetchWithVars(LAB, "/lab/read-path", {
      method: "POST",
      headers: admin(),
      body: JSON.stringify({ ...experiment, saleId: undefined }),
    });
    await fetchWithVars(LAB, `/lab/sales/${crypto.randomUUID()}/report`, { headers: admin() });

    // Order events' endpoints: one disabled at once, so nothing is sent from this file.
    const endpoint = (await (
      await call("/admin/webhooks", {
        method: "POST",
        headers: admin(),
        body: JSON.stringify({ url: "https://contract.shop.example/events", events: ["sale.ended"] }),
      })
    ).json()) as { id: string };
    await call(`/admin/webhooks/${endpoint.id}`, { method: "PATCH", headers: admin(), body: JSON.stringify({ enabled: false }) });
    await call(`/admin/webhooks/${endpoint.id}`, {
      method: "PATCH",
      headers: admin(),
      body: JSON.stringify({ url: "http://x" }),
    });
    await call("/admin/webhooks", { headers: admin() });
    await call("/admin/webhooks");
    await call(`/admin/webhooks/${endpoint.id}/rotate-secret`, { method: "POST", headers: admin() });
    // A delivery to replay: the endpoint is subscribed to sale.ended, raised here by hand.
    await env.DB.prepare("UPDATE event_endpoints SET enabled = 1 WHERE id = ?").bind(endpoint.id).run();
    await env.DB.prepare(
      "INSERT INTO order_events (id, type, subject, sale_id, snapshot, created_at) VALUES (?, 'sale.ended', 'sale:1', 1, '{}', 0)",
    )
      .bind(`evt_${crypto.randomUUID().replaceAll("-", "").slice(0, 24)}`)
      .run();
    await env.DB.prepare("UPDATE event_endpoints SET enabled = 0 WHERE id = ?").bind(endpoint.id).run();
    const page = (await (await call(`/admin/webhooks/${endpoint.id}/deliveries`, { headers: admin() })).json()) as {
      deliveries: { id: string }[];
    };
    await call(`/admin/webhooks/${endpoint.id}/deliveries?cursor=x`, { headers: admin() });
    await call(`/admin/webhooks/${endpoint.id}/deliveries/${page.deliveries[0]?.id}/replay`, {
      method: "POST",
      headers: admin(),
    });
    await call(`/admin/webhooks/${endpoint.id}/deliveries/dlv_000000000000000000000000/replay`, {
      method: "POST",
      headers: admin(),
    });

    // A sale sold by draw: an entry, changed and withdrawn, then one that is drawn, and its public record.
    const closesAt = Date.now() + 1_500;
    const drawn = (await (
      await call("/admin/sales", {
        method: "POST",
        headers: admin(),
        body: JSON.stringify({
          name: "contract draw",
          stock: 1,
          startsAt: new Date(closesAt).toISOString(),
          endsAt: new Date(closesAt + 60_000).toISOString(),
          draw: { opensAt: new Date(Date.now() - 1_000).toISOString(), closesAt: new Date(closesAt).toISOString() },
        }),
      })
    ).json()) as { id: string };
    const entrant = bearer(await userToken("contract-entrant"));
    await call(`/api/sales/${drawn.id}/entries`, { method: "POST", headers: entrant });
    await call(`/api/sales/${drawn.id}/entries/mine`, { method: "DELETE", headers: entrant });
    await call(`/api/sales/${drawn.id}/entries`, { method: "POST", headers: entrant });
    await call(`/api/sales/${drawn.id}/entries/mine`, { headers: entrant });
    await call(`/api/sales/${drawn.id}/draw`);
    await call(`/api/sales/${drawn.id}/draw/entries`); // 409: not committed yet
    await new Promise((r) => setTimeout(r, Math.max(0, closesAt - Date.now() + 100)));
    await call(`/admin/sales/${drawn.id}/draw`, { method: "POST", headers: admin() });
    await eventually("the draw's entries to be committed", async () => {
      const res = await SELF.fetch(`${BASE}/api/sales/${drawn.id}/draw/entries`);
      return res.status === 200;
    });
    await call(`/api/sales/${drawn.id}/draw/entries`);

    // Presale lanes: a batch of codes made, listed and revoked; a staff pass minted and listed.
    const laned = (await (
      await call("/admin/sales", {
        method: "POST",
        headers: admin(),
        body: JSON.stringify({
          name: "contract lanes",
          stock: 2,
          startsAt: new Date(Date.now() + 60_000).toISOString(),
          endsAt: new Date(Date.now() + 120_000).toISOString(),
          lanes: [{ name: "members", startsAt: new Date(Date.now() - 1_000).toISOString(), stock: 1 }],
          queue: { mode: "fifo" },
        }),
      })
    ).json()) as { id: string };
    const batch = (await (
      await call(`/admin/sales/${laned.id}/lanes/members/codes`, {
        method: "POST",
        headers: admin(),
        body: JSON.stringify({ count: 2 }),
      })
    ).json()) as { batchId: string; codes: string[] };
    await call(`/admin/sales/${laned.id}/lanes/nobody/codes`, {
      method: "POST",
      headers: admin(),
      body: JSON.stringify({ count: 2 }),
    });
    await call(`/api/sales/${laned.id}/checkout`, { method: "POST", headers: buyer }); // ACCESS_CODE_REQUIRED
    await call(`/api/sales/${laned.id}/checkout`, { method: "POST", headers: { ...buyer, "Access-Code": "0000-0000-0000" } });
    await call(`/admin/sales/${laned.id}/codes`, { headers: admin() });
    await call(`/admin/sales/${laned.id}/codes/${batch.batchId}`, { method: "DELETE", headers: admin() });
    await call(`/admin/sales/${laned.id}/bypass`, {
      method: "POST",
      headers: admin(),
      body: JSON.stringify({ userId: "contract-staff" }),
    });
    await call(`/admin/sales/${laned.id}/bypass`, { headers: admin() });

    // The funnel, read back from the local stand-in: one sale's, every sale's, and a sale that is none.
    await call(`/admin/sales/${laned.id}/funnel`, { headers: admin() });
    await call("/admin/sales/999999/funnel", { headers: admin() });
    await call("/admin/funnel", { headers: admin() });

    // Every operation answered with success at least once, and each answer above matched.
    const operations = Object.values(document.paths).flatMap((methods) => Object.values(methods) as { operationId: string }[]);
    const succeeded = new Set([...seen].filter((s) => / 2\d\d$/.test(s)).map((s) => s.split(" ")[0]));
    expect(operations.map((o) => o.operationId).filter((id) => !succeeded.has(id))).toEqual([]);
    expect([...seen].filter((s) => / 4\d\d$/.test(s)).length).toBeGreaterThan(20);
  });
});
