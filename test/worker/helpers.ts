import { createExecutionContext, env, SELF, waitOnExecutionContext } from "cloudflare:test";
import { Redis } from "@upstash/redis/cloudflare";
import { expect } from "vitest";
import { ApiClient } from "../../dev/lib/api-client";
import { orderIdCipher } from "../../dev/lib/order-ids";
import { mintUserToken } from "../../dev/lib/user-tokens";
import { eventually } from "../../dev/lib/wait";
import worker from "../../src/index";
import type { ReconciliationReport } from "../../src/shared/api-types";
import { type BucketSplit, bucketKeyOf, saleKeys } from "../../src/shared/keys";
import { checkedFetch } from "./contract";

export const BASE = "https://flash.test";
/** The Worker as the local stack serves it: a loopback Host, where the dev switches act. */
export const LOOPBACK_BASE = "http://127.0.0.1:8787";

const apiAt = (base: string) =>
  new ApiClient({
    fetch: (path, init) => checkedFetch((req) => SELF.fetch(req), `${base}${path}`, init),
    adminToken: env.ADMIN_TOKEN,
    jwtSecret: env.JWT_SECRET,
  });

/** The API through the Worker under test (SELF), as an admin; every answer is checked against openapi.json. */
export const api = apiAt(BASE);
/** The same API on a loopback Host, where the dev switches act: payments go through the dev provider here. */
export const loopbackApi = apiAt(LOOPBACK_BASE);

export function userToken(userId: string, { expiresIn = 3600, secret = env.JWT_SECRET } = {}): Promise<string> {
  return mintUserToken(userId, secret, expiresIn);
}

export const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

/** `req` through the Worker's fetch handler with `vars` over the suite's env, its waitUntil work included. */
export async function handleWithVars(vars: Partial<Env>, req: Request): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(req, { ...env, ...vars }, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

/** A request to `path` with some vars changed (ALLOWED_ORIGINS, DEV_LOGIN, ...), its answer checked against openapi.json. */
export const fetchWithVars = (vars: Partial<Env>, path: string, init?: RequestInit, base = BASE): Promise<Response> =>
  checkedFetch((req) => handleWithVars(vars, req), `${base}${path}`, init);

/**
 * A client address of its own, in a /64 of its own (the per-address controls count an IPv6
 * caller by its prefix), so counts in the suite's shared Redis never meet.
 */
export const freshAddress = (): string => {
  const group = () => crypto.randomUUID().slice(0, 4);
  return `2001:db8:${group()}:${group()}::${group()}`;
};

/** The local stack's switch: loopback hosts only, where Cloudflare's published Turnstile test secrets are accepted. */
export const LOCAL_STACK: Partial<Env> = { LOOPBACK_HOSTS_ONLY: "true" };

/** A request to `path` as the local stack serves it (a loopback Host, LOOPBACK_HOSTS_ONLY on), `vars` over that. */
export const fetchAsLocalStack = (vars: Partial<Env>, path: string, init?: RequestInit): Promise<Response> =>
  fetchWithVars({ ...LOCAL_STACK, ...vars }, path, init, LOOPBACK_BASE);

/** A client for inspecting Redis through the same gateway the Worker uses. */
export const redis = new Redis({
  url: env.UPSTASH_REDIS_REST_URL,
  token: env.UPSTASH_REDIS_REST_TOKEN,
  automaticDeserialization: false,
  enableTelemetry: false,
});

export const createSale = api.createSale.bind(api);
export const checkout = api.checkoutResponse.bind(api);

export const report = (saleId: string): Promise<ReconciliationReport> => api.report(saleId);

const orderIds = orderIdCipher(env.ORDER_ID_KEY as string);
/** The internal id (what Redis, the queues and D1 keep) of an order id the API gave. */
export const internalId = (orderId: string): string => orderIds.toInternal(orderId);

/**
 * Waits until every given order id (as the API gave it, or internal) is confirmed in D1 (by id,
 * never by row count: a message an earlier test sent may land now).
 */
export async function waitForConfirmed(orderIds: string[], timeoutMs = 60_000): Promise<void> {
  const ids = JSON.stringify(orderIds.map(internalId));
  let confirmed = 0;
  await eventually(
    () => `${orderIds.length} orders to be confirmed in D1 (${confirmed} are)`,
    async () => {
      const row = await env.DB.prepare("SELECT COUNT(*) AS n FROM orders WHERE order_id IN (SELECT value FROM json_each(?))")
        .bind(ids)
        .first<{ n: number }>();
      confirmed = row?.n ?? 0;
      return confirmed === orderIds.length;
    },
    timeoutMs,
  );
}

/** D1's view of a sale: each confirmed order (its internal id) and its buyer. */
export async function d1Orders(saleId: string): Promise<{ order_id: string; user_id: string }[]> {
  const { results } = await env.DB.prepare("SELECT order_id, user_id FROM orders WHERE sale_id = ?")
    .bind(Number(saleId))
    .all<{ order_id: string; user_id: string }>();
  return results;
}

/** An order as D1 keeps it in a sale with lanes: its units, state, and the lane and code it was bought with. */
export interface LaneOrderRow {
  order_id: string;
  user_id: string;
  variant: string;
  quantity: number;
  status: string;
  lane: string | null;
  access_code: string | null;
}

/** D1's orders of a sale with their lanes and codes (docs/lanes.md). */
export async function d1LaneOrders(saleId: string): Promise<LaneOrderRow[]> {
  const { results } = await env.DB.prepare(
    "SELECT order_id, user_id, variant, quantity, status, lane, access_code FROM orders WHERE sale_id = ?",
  )
    .bind(Number(saleId))
    .all<LaneOrderRow>();
  return results;
}

/** D1's failed (dead-lettered) orders of a sale (their internal ids) and their buyers. */
export async function d1FailedOrders(saleId: string): Promise<{ order_id: string; user_id: string; reason: string }[]> {
  const { results } = await env.DB.prepare("SELECT order_id, user_id, reason FROM failed_orders WHERE sale_id = ?")
    .bind(Number(saleId))
    .all<{ order_id: string; user_id: string; reason: string }>();
  return results;
}

/** How D1 says the sale's buyers are split: its bucket count and key. */
export async function splitOf(saleId: string): Promise<BucketSplit> {
  const row = await env.DB.prepare("SELECT redis_buckets, bucket_key FROM sales WHERE id = ?")
    .bind(Number(saleId))
    .first<{ redis_buckets: number; bucket_key: string | null }>();
  if (!row) throw new Error(`no sale ${saleId} in D1`);
  return { count: row.redis_buckets, key: row.bucket_key === null ? null : bucketKeyOf(row.bucket_key) };
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

export { eventually };

/**
 * The invariants every concurrency test ends with: sold <= stock in Redis and D1, at most
 * one order per user, and every accepted order settled exactly once with nothing extra:
 * confirmed (`accepted`, user -> order id, as the API gave it or internal) or, when
 * dead-lettered, failed (`failed`) with its unit back in stock.
 */
export async function expectSettledInvariants(
  saleId: string,
  stock: number,
  accepted: Map<string, string>,
  failed: Map<string, string> = new Map(),
): Promise<ReconciliationReport> {
  await waitForConfirmed([...accepted.values()]);
  const internal = (ids: Map<string, string>) => new Map([...ids].map(([user, id]) => [user, internalId(id)]));
  accepted = internal(accepted);
  failed = internal(failed);
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
  expect(r.redis.outbox).toBe(0);
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

/** A buyer in a sale's waiting room: who, their token, the ticket to poll with. */
export interface InLine {
  userId: string;
  token: string;
  ticket: string;
}

/** Joins the sale's waiting room one after another: places follow the list's order. */
export async function joinInOrder(saleId: string, userIds: readonly string[]): Promise<InLine[]> {
  const joined: InLine[] = [];
  for (const userId of userIds) {
    const token = await userToken(userId);
    const answer = await api.joinWaitingRoom(saleId, token);
    if (!answer.body) throw new Error(`${userId} could not join: ${answer.status} ${answer.code}`);
    joined.push({ userId, token, ticket: answer.body.ticket });
  }
  return joined;
}
