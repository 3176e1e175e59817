import { env, SELF } from "cloudflare:test";
import { Redis } from "@upstash/redis/cloudflare";
import { sign } from "hono/jwt";
import { expect } from "vitest";
import { saleKeys } from "../../src/redis/keys";
import type { SaleView } from "../../src/sales/sale";
import type { ReconciliationReport } from "../../src/settlement/report-shape";

export const BASE = "https://flash.test";

export async function userToken(userId: string, { expiresIn = 3600, secret = env.JWT_SECRET } = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return sign({ sub: userId, iat: now, exp: now + expiresIn }, secret, "HS256");
}

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** A client for inspecting Redis through the same gateway the Worker uses. */
export const redis = new Redis({
  url: env.UPSTASH_REDIS_REST_URL,
  token: env.UPSTASH_REDIS_REST_TOKEN,
  automaticDeserialization: false,
  enableTelemetry: false,
});

export type CreatedSale = SaleView;

export async function createSale(
  overrides: Partial<{ name: string; stock: number; startsAt: string; endsAt: string; admission: object }> = {},
  headers: Record<string, string> = {},
): Promise<CreatedSale> {
  const res = await SELF.fetch(`${BASE}/admin/sales`, {
    method: "POST",
    headers: { ...bearer(env.ADMIN_TOKEN), "Content-Type": "application/json", ...headers },
    body: JSON.stringify({
      name: "Test drop",
      stock: 10,
      startsAt: new Date(Date.now() - 1000).toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      admission: { rate: 100_000, burst: 1_000_000 },
      ...overrides,
    }),
  });
  expect([200, 201]).toContain(res.status);
  return res.json();
}

export function checkout(saleId: string, token: string, init: RequestInit = {}): Promise<Response> {
  return SELF.fetch(`${BASE}/api/sales/${saleId}/checkout`, {
    method: "POST",
    ...init,
    headers: { ...bearer(token), ...(init.headers as Record<string, string> | undefined) },
  });
}

export type Report = ReconciliationReport;

export async function report(saleId: string): Promise<Report> {
  const res = await SELF.fetch(`${BASE}/admin/sales/${saleId}/report`, { headers: bearer(env.ADMIN_TOKEN) });
  expect(res.status).toBe(200);
  return res.json();
}

/** Waits until every given order id is confirmed in D1 (never a row count: see TOOLCHAIN). */
export async function waitForConfirmed(orderIds: string[], timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const ids = JSON.stringify(orderIds);
  for (;;) {
    const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM orders WHERE order_id IN (SELECT value FROM json_each(?))")
      .bind(ids)
      .first<{ n: number }>();
    if (row?.n === orderIds.length) return;
    if (Date.now() > deadline) throw new Error(`only ${row?.n} of ${orderIds.length} orders confirmed in time`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** D1's view of a sale: each confirmed order and its buyer. */
export async function d1Orders(saleId: string): Promise<{ order_id: string; user_id: string }[]> {
  const { results } = await env.DB.prepare("SELECT order_id, user_id FROM orders WHERE sale_id = ?")
    .bind(Number(saleId))
    .all<{ order_id: string; user_id: string }>();
  return results;
}

/** D1's failed (dead-lettered) orders of a sale and their buyers. */
export async function d1FailedOrders(saleId: string): Promise<{ order_id: string; user_id: string; reason: string }[]> {
  const { results } = await env.DB.prepare("SELECT order_id, user_id, reason FROM failed_orders WHERE sale_id = ?")
    .bind(Number(saleId))
    .all<{ order_id: string; user_id: string; reason: string }>();
  return results;
}

/** Units left in Redis for a sale. */
export async function remaining(saleId: string): Promise<number> {
  return Number(await redis.hget(saleKeys(saleId).meta, "remaining"));
}

/** GET /api/orders/:id as `userId`: the status its owner sees. */
export async function orderStatus(orderId: string, userId: string): Promise<{ http: number; status?: string }> {
  const res = await SELF.fetch(`${BASE}/api/orders/${orderId}`, { headers: bearer(await userToken(userId)) });
  const body = (await res.json()) as { status?: string };
  return { http: res.status, status: body.status };
}

/** Polls `check` until it returns a value other than undefined. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * The invariants every concurrency test ends with: sold <= stock in Redis and D1, at most
 * one order per user, and every accepted order settled exactly once with nothing extra:
 * confirmed (`accepted`, user -> order id) or, when dead-lettered, failed (`failed`) with
 * its unit back in stock.
 */
export async function expectSettledInvariants(
  saleId: string,
  stock: number,
  accepted: Map<string, string>,
  failed: Map<string, string> = new Map(),
): Promise<Report> {
  await waitForConfirmed([...accepted.values()]);
  const rows = await d1Orders(saleId);
  expect(rows.length).toBeLessThanOrEqual(stock);
  expect(new Set(rows.map((r) => r.user_id)).size).toBe(rows.length);
  expect(new Map(rows.map((r) => [r.user_id, r.order_id]))).toEqual(accepted);
  const failedRows = await d1FailedOrders(saleId);
  expect(new Map(failedRows.map((r) => [r.user_id, r.order_id]))).toEqual(failed);
  // Confirmed or failed, never both.
  const confirmedIds = new Set(accepted.values());
  for (const orderId of failed.values()) expect(confirmedIds.has(orderId)).toBe(false);

  // The consumer clears the outbox right after D1 commits; give it a moment.
  let r = await report(saleId);
  for (let i = 0; i < 50 && r.redis.outbox > 0; i++) {
    await new Promise((res) => setTimeout(res, 100));
    r = await report(saleId);
  }
  expect(r.oversold).toBe(0);
  expect(r.redis.reserved).toBeLessThanOrEqual(stock);
  expect(r.redis.remaining).toBe(stock - accepted.size);
  expect(r.d1.confirmed).toBe(accepted.size);
  expect(r.d1.failed).toBe(failed.size);
  expect(r.d1.soldCounter).toBe(accepted.size);
  expect(r.pending).toBe(0);
  expect(r.reconciled).toBe(true);
  return r;
}
