// The clean-up: an ended, fully settled sale is archived to D1 and its Redis keys removed in
// chunks; the report, the stats, the order status route and checkout keep answering from D1.
// Through the real routes, queues, D1 and redis-server inside workerd. The clean-up runs
// with no grace period and only for each test's own sales: other test files share this D1
// and this Redis, and their sales must not be archived under them.
import { createExecutionContext, createScheduledController, env, SELF, waitOnExecutionContext } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { Lock } from "../../src/locks";
import { ARCHIVE_LOCK, type ArchiveOptions, type ArchiveRun, archiveSettledSales } from "../../src/settlement/archive";
import type { OrderView, ReconciliationReport, SaleStats } from "../../src/shared/api-types";
import { bucketKeys, saleKeys } from "../../src/shared/keys";
import { EVICT_AGAIN_AFTER_SECONDS } from "../../src/shared/limits";
import {
  api,
  BASE,
  bearer,
  createSale,
  eventually,
  expectSettledInvariants,
  internalId,
  loopbackApi,
  redis,
  report,
  userToken,
} from "./helpers";

/**
 * The cron's clean-up for these sales only, with no grace period. Another test file's cron
 * run may hold the clean-up lock for a moment (a run that finds it taken does nothing): then
 * it is asked again.
 */
async function archive(saleIds: string[], options: ArchiveOptions = {}): Promise<ArchiveRun> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const run = await archiveSettledSales(env, { graceMs: 0, saleIds, ...options });
    if (!run.skipped) return run;
    if (Date.now() > deadline) throw new Error("the clean-up lock stayed taken for 10 s");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Every key whose name holds the sale's id (its hash tag, and its re-drive lock's counter), by SCAN. */
async function keysOf(saleId: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = "0";
  do {
    const [next, keys] = (await redis.scan(cursor, { match: `*sale:${saleId}}*`, count: 1_000 })) as [string, string[]];
    found.push(...keys);
    cursor = String(next);
  } while (cursor !== "0");
  return found;
}

/** How long the checkout's isolate memo trusts what it saw, and its clock-skew margin (src/checkout/isolate-memo.ts). */
const MEMO_SECOND_MS = 1_000;
const sleepUntil = (at: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, at - Date.now())));

const archiveRow = (saleId: string) =>
  env.DB.prepare("SELECT * FROM sale_archives WHERE sale_id = ?").bind(Number(saleId)).first();
const archivedAt = (saleId: string) =>
  env.DB.prepare("SELECT archived_at FROM sales WHERE id = ?").bind(Number(saleId)).first<number | null>("archived_at");

/** A checkout's status and error code. */
async function tryCheckout(saleId: string, user: string, headers: Record<string, string> = {}) {
  const res = await api.checkoutResponse(saleId, await userToken(user), { headers });
  const body = (await res.json()) as { orderId?: string; error?: { code: string } };
  return { status: res.status, orderId: body.orderId, code: body.error?.code };
}

/** The report as it reads once archived: the same, but Redis no longer holds the sale (nor any key of it). */
const asArchived = (before: ReconciliationReport) => ({
  ...before,
  redis: { ...before.redis, loaded: false },
  largestKey: null,
  archivedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
});

/** The cron's whole run, as the trigger starts it (re-drive, sweep, clean-up with its real grace period). */
async function runCron(vars: Partial<Env> = {}): Promise<void> {
  await worker.scheduled(createScheduledController(), { ...env, ...vars });
}

describe("clean-up of an ended, settled sale", () => {
  it("archives it and removes its keys in chunks over two runs; report, stats, orders and checkout answer from D1", async () => {
    const stock = 80;
    const crowdId = Date.now().toString(36);
    const users = Array.from({ length: 120 }, (_, i) => `cleanup-${crowdId}-${i}`);
    const tokens = await Promise.all(users.map((user) => userToken(user)));
    const sale = await createSale({ stock, endsAt: new Date(Date.now() + 6_000).toISOString() });
    // Not before the end.
    expect(await archive([sale.id])).toMatchObject({ archived: [], unsettled: [], commands: 0 });
    // A shopper looks at the sale: its card is cached (and its rebuild lock taken once).
    expect((await SELF.fetch(`${BASE}/api/sales/${sale.id}`)).status).toBe(200);
    // A crowd of buyers pressing twice, each press with the same Idempotency-Key (a retry), in
    // waves of 48 requests: one isolate slows down badly with hundreds in flight at once.
    const press = async (i: number) => {
      const res = await SELF.fetch(`${BASE}/api/sales/${sale.id}/checkout`, {
        method: "POST",
        headers: { ...bearer(tokens[i] as string), "Idempotency-Key": `key-${users[i]}` },
      });
      const body = (await res.json()) as { orderId?: string; error?: { code: string } };
      return { user: users[i] as string, status: res.status, orderId: body.orderId, code: body.error?.code };
    };
    const answers: Awaited<ReturnType<typeof press>>[] = [];
    for (let first = 0; first < users.length; first += 24) {
      const wave = users.slice(first, first + 24).map((_, j) => first + j);
      answers.push(...(await Promise.all(wave.flatMap((i) => [press(i), press(i)]))));
    }
    const accepted = new Map<string, string>();
    for (const { user, status, orderId, code } of answers) {
      if (status !== 202) {
        // SALE_ENDED only when a slow machine let the window close on the crowd.
        expect(["SOLD_OUT", "SALE_ENDED"], `${user}'s press`).toContain(code);
        continue;
      }
      // A repeated press got the first one's order, never a second one.
      expect(accepted.get(user) ?? orderId).toBe(orderId);
      accepted.set(user, orderId as string);
    }
    const sold = accepted.size;
    expect(sold).toBeLessThanOrEqual(stock);
    expect(sold, "enough buyers for several chunks").toBeGreaterThan(40);
    const before = await expectSettledInvariants(sale.id, stock, accepted);
    expect(before).toMatchObject({ redis: { loaded: true, buyers: sold, minted: sold }, archivedAt: null });

    // The cron's own grace period (a week and an hour) keeps it after the end too. Past the
    // isolate memo's second too (its sold-out knowledge and clock-skew margin): a busy machine's
    // crowd may end at the sale's end, and the late buyers below must be answered by the archive.
    const crowdDoneAt = Date.now();
    await sleepUntil(Math.max(Date.parse(sale.endsAt), crowdDoneAt) + MEMO_SECOND_MS + 50);
    await runCron();
    expect(await archivedAt(sale.id)).toBeNull();
    expect(await redis.exists(saleKeys(sale.id).meta)).toBe(1);

    // A run that stops after one chunk of 20, as a crash or an exhausted budget would.
    const partial = await archive([sale.id], { chunk: 20, maxCommands: 1 });
    expect(partial).toMatchObject({ archived: [], inProgress: [sale.id], commands: 1, removed: 20 });
    expect(await archiveRow(sale.id)).toMatchObject({ remaining: stock - sold, minted: sold, buyers: sold, returned: 0 });
    expect(await archivedAt(sale.id)).toBeNull();
    expect(await redis.exists(saleKeys(sale.id).meta)).toBe(0); // meta went first
    expect(await redis.hlen(bucketKeys(sale.id, 0, 1).buyers)).toBe(sold - 20);
    // Halfway, the report already reads the archive, and checkout says the sale ended.
    expect(await report(sale.id)).toEqual(asArchived(before));
    expect(await tryCheckout(sale.id, "halfway-late-buyer")).toMatchObject({ status: 409, code: "SALE_ENDED" });

    // The next run finishes it: more than one command per big key, every key gone.
    const rest = await archive([sale.id], { chunk: 20 });
    expect(rest).toMatchObject({ archived: [sale.id], inProgress: [], unsettled: [] });
    // The rest of the buyers and every checkout key, 20 at a time; pending, outbox, returned
    // and the waiting room's keys (no queue here) are empty already: one look at them all, no command each.
    expect(rest.commands).toBe(Math.ceil((sold - 20) / 20) + Math.ceil(sold / 20));
    expect(rest.removed).toBe(2 * sold - 20);
    expect(await keysOf(sale.id)).toEqual([]);
    expect(await archivedAt(sale.id)).toBeGreaterThan(0);

    // The re-drive and the sweep write nothing back; a third clean-up has nothing to do.
    await runCron({ OUTBOX_REDRIVE_AFTER_MS: "0" });
    expect(await keysOf(sale.id)).toEqual([]);
    expect(await archive([sale.id])).toMatchObject({ archived: [], inProgress: [], unsettled: [], commands: 0 });

    // The report and the console's stats read D1 only.
    const after = await report(sale.id);
    expect(after).toEqual(asArchived(before));
    expect(after.reconciled).toBe(true);
    const stats = await SELF.fetch(`${BASE}/admin/sales/${sale.id}/stats`, { headers: bearer(env.ADMIN_TOKEN) });
    expect(stats.status).toBe(200);
    const body = (await stats.json()) as SaleStats;
    expect(body.report).toEqual(after);
    expect(body.sale).toMatchObject({ id: sale.id, remaining: stock - sold, status: "ended" });
    expect(body.series.points).toEqual([]); // the counters went with the other keys

    // Every buyer's order still answers, from D1.
    const orders = await Promise.all(
      [...accepted].map(async ([user, orderId]) => {
        const res = await SELF.fetch(`${BASE}/api/orders/${orderId}`, { headers: bearer(await userToken(user)) });
        return { status: res.status, body: (await res.json()) as OrderView };
      }),
    );
    for (const order of orders) expect(order).toMatchObject({ status: 200, body: { saleId: sale.id, status: "confirmed" } });

    // Checkout: the sale ended, for a newcomer and for a buyer alike, with no key written back
    // but this minute's outcome counters, which expire by themselves.
    expect(await tryCheckout(sale.id, "late-buyer")).toMatchObject({ status: 409, code: "SALE_ENDED" });
    expect(await tryCheckout(sale.id, users[0] as string)).toMatchObject({ status: 409, code: "SALE_ENDED" });
    for (const key of await keysOf(sale.id)) {
      expect(key).toMatch(/:stats:\d+$/);
      expect(await redis.ttl(key)).toBeGreaterThan(0);
    }

    // The sale page shows what was left unsold, from the archive; what it caches (the card, its
    // rebuild lock's counter) expires by itself.
    const page = await SELF.fetch(`${BASE}/api/sales/${sale.id}`);
    expect(await page.json()).toMatchObject({ id: sale.id, remaining: stock - sold, status: "ended" });
    for (const key of await keysOf(sale.id)) {
      expect(key).toMatch(/:(stats:\d+|card|fence)$/);
      expect(await redis.pttl(key), key).toBeGreaterThan(0);
    }
  });

  it("leaves a sale with unsettled work alone: an order only in the outbox, an order awaiting payment; archives each once settled", async () => {
    const endsAt = new Date(Date.now() + 3_000).toISOString();
    const [unsent, unpaid] = await Promise.all([
      createSale({ stock: 5, endsAt, name: "cleanup: an order never sent" }),
      createSale({ stock: 5, endsAt, paymentWindowSec: 600, name: "cleanup: an order awaiting payment" }),
    ]);
    // FAULT INJECTION (a queue send cannot be made to fail locally): the orders queue drops
    // this checkout's message, so its order waits in the outbox.
    const dropping = { ...env, ORDERS: { send: async () => {}, sendBatch: async () => {} } as unknown as Queue };
    const ctx = createExecutionContext();
    const lost = await worker.fetch(
      new Request(`${BASE}/api/sales/${unsent.id}/checkout`, { method: "POST", headers: bearer(await userToken("never-sent")) }),
      dropping,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(lost.status).toBe(202);
    const lostOrder = internalId(((await lost.json()) as { orderId: string }).orderId);
    const waiting = await tryCheckout(unpaid.id, "slow-payer");
    expect(waiting.status).toBe(202);
    await eventually("the order to await payment", async () => {
      const row = await env.DB.prepare("SELECT status FROM orders WHERE order_id = ?")
        .bind(internalId(waiting.orderId as string))
        .first<string>("status");
      return row === "awaiting_payment";
    });
    await sleepUntil(Date.parse(endsAt) + 50);

    const refused = await archive([unsent.id, unpaid.id]);
    expect(refused).toMatchObject({ archived: [], inProgress: [], commands: 0 });
    expect(new Set(refused.unsettled)).toEqual(new Set([unsent.id, unpaid.id]));
    for (const sale of [unsent, unpaid]) {
      expect(await archiveRow(sale.id)).toBeNull();
      expect(await archivedAt(sale.id)).toBeNull();
      expect(await redis.exists(saleKeys(sale.id).meta)).toBe(1);
      expect(await redis.hlen(bucketKeys(sale.id, 0, 1).buyers)).toBe(1);
    }
    expect(await redis.zscore(bucketKeys(unsent.id, 0, 1).outbox, lostOrder)).not.toBeNull();

    // Settled: the re-drive sends the lost order, the buyer pays.
    await runCron({ OUTBOX_REDRIVE_AFTER_MS: "0" });
    await eventually("the re-driven order to be confirmed", async () => (await report(unsent.id)).d1.confirmed === 1);
    const paid = await loopbackApi.pay(waiting.orderId as string, await userToken("slow-payer"), "tok_visa", "cleanup-pay");
    expect(paid).toMatchObject({ status: 200, body: { status: "paid" } });
    await eventually("the outbox record to be cleared", async () => (await report(unsent.id)).redis.outbox === 0);

    expect(await archive([unsent.id, unpaid.id])).toMatchObject({ inProgress: [], unsettled: [] });
    for (const sale of [unsent, unpaid]) {
      expect(await keysOf(sale.id)).toEqual([]);
      expect(await report(sale.id)).toMatchObject({ reconciled: true, redis: { loaded: false, minted: 1, buyers: 1 } });
    }
    expect(await report(unpaid.id)).toMatchObject({ d1: { paid: 1 }, archivedAt: expect.any(String) });
  });

  it("a sale that ended hours ago: one clean-up at a time, archived, its create replayed, its checkout refused, no key written back", async () => {
    const input = {
      stock: 7,
      startsAt: new Date(Date.now() - 4 * 3_600_000).toISOString(),
      endsAt: new Date(Date.now() - 3 * 3_600_000).toISOString(),
    };
    const idempotencyKey = `cleanup-old-${Date.now()}`;
    const createdAt = Date.now();
    const sale = await createSale(input, { idempotencyKey });
    // While another run holds the clean-up, a run does nothing at all.
    const other = await new Lock(redis, ARCHIVE_LOCK).tryAcquire({ leaseMs: 10_000, waitMs: 5_000 });
    expect(other).toBeDefined();
    expect(await archiveSettledSales(env, { graceMs: 0, saleIds: [sale.id] })).toMatchObject({ skipped: true, archived: [] });
    expect(await redis.exists(saleKeys(sale.id).meta)).toBe(1);
    await other?.release();
    expect(await archive([sale.id])).toMatchObject({ archived: [sale.id] });
    expect(await keysOf(sale.id)).toEqual([]);
    expect(await report(sale.id)).toMatchObject({
      reconciled: true,
      redis: { loaded: false, remaining: 7, reserved: 0, minted: 0 },
      archivedAt: expect.any(String),
    });

    // A late retry of the create answers the sale, and does not load it into Redis again.
    expect(await createSale(input, { idempotencyKey })).toMatchObject({ id: sale.id });
    // The first checkout learns from D1 that the sale ended; the second is refused by the isolate.
    expect(await tryCheckout(sale.id, "too-late-1")).toMatchObject({ status: 409, code: "SALE_ENDED" });
    expect(await tryCheckout(sale.id, "too-late-2")).toMatchObject({ status: 409, code: "SALE_ENDED" });
    // By then the isolate's refusal counters would be written, and the creation's second
    // eviction, sent before the sale was archived, has run too.
    const secondEvictionRan = createdAt + (EVICT_AGAIN_AFTER_SECONDS + 1.5) * 1_000;
    await new Promise((resolve) => setTimeout(resolve, Math.max(1_500, secondEvictionRan - Date.now())));
    expect(await keysOf(sale.id)).toEqual([]);
  });
});
