// The whole local stack killed in the middle of settling a spike, then started again on the
// same data: redis-server gets SIGKILL (its AOF on disk is all that survives), Miniflare is
// disposed (its queues live in memory, so every message not yet consumed is really lost),
// the gateway goes with them. Nothing is faked; only the outbox re-drive can recover.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";

const STOCK = 140;
const USERS = 220;
const VARS = { OUTBOX_REDRIVE_AFTER_MS: "1000" };

const base = mkdtempSync(path.join(tmpdir(), "flash-crash-"));
const dirs = { redisDataDir: path.join(base, "redis"), stateDir: path.join(base, "state") };
const stacks: Stack[] = [];

afterAll(async () => {
  for (const s of stacks) await s.stop().catch(() => {});
  rmSync(base, { recursive: true, force: true });
});

async function d1Orders(stack: Stack, saleId: string): Promise<Map<string, string>> {
  const rows = await stack.settledOrders(saleId);
  const byUser = new Map(rows.map((r) => [r.userId, r.orderId]));
  expect(byUser.size, "a user holds two orders in D1").toBe(rows.length);
  return byUser;
}

describe("the whole stack killed mid-drain", () => {
  it("loses nothing and doubles nothing: the outbox re-drive settles what the dead queue held", async () => {
    // Batches of 25 that wait up to 60 s to fill (legal Queues settings): when the stack
    // dies, some batches have settled, some may be in flight, and the tail is still queued.
    const first = await startStack({ ...dirs, vars: VARS, ordersConsumer: { maxBatchSize: 25, maxBatchTimeout: 60 } });
    stacks.push(first);
    const sale = await first.api.createSale({ stock: STOCK, name: "crash" });
    const users = Array.from({ length: USERS }, (_, i) => `crash-${sale.id}-${i}`);
    const tokens = await Promise.all(users.map((u) => first.api.userToken(u)));
    const results = await Promise.all(
      tokens.map(async (t, i) => ({ user: users[i] as string, ...(await first.api.checkout(sale.id, t)) })),
    );

    const accepted = new Map<string, string>();
    for (const r of results) {
      if (r.status === 202) accepted.set(r.user, r.orderId as string);
      else expect([r.status, r.code]).toEqual([409, "SOLD_OUT"]);
    }
    expect(accepted.size).toBe(STOCK);

    // Crash: no goodbye from Redis, and the Worker's queues vanish with Miniflare.
    await first.redis.kill();
    await first.worker.stop();
    await first.gateway.stop();
    stacks.pop();

    const second = await startStack({ ...dirs, vars: VARS });
    stacks.push(second);

    // Redis kept every reservation (AOF); D1 kept what had committed; the rest was lost in
    // flight and waits in the outbox. The report already reconciles, counting it pending.
    const before = await second.api.report(sale.id);
    const settledBefore = await d1Orders(second, sale.id);
    expect(before.redis.reserved).toBe(STOCK);
    expect(before.redis.buyers).toBe(STOCK);
    expect(before.redis.minted).toBe(STOCK);
    expect(settledBefore.size, "nothing was lost in flight: the test did not crash mid-drain").toBeLessThan(STOCK);
    expect(before.d1.confirmed).toBe(settledBefore.size);
    expect(before.pending).toBe(STOCK - settledBefore.size);
    expect(before.reconciled).toBe(true);
    for (const [user, orderId] of settledBefore) expect(accepted.get(user)).toBe(orderId);

    // One order per user survives the crash: a buyer trying again is told about their order.
    const [someBuyer, theirOrder] = [...accepted][STOCK - 1] as [string, string];
    const again = await second.api.checkoutResponse(sale.id, await second.api.userToken(someBuyer));
    expect(again.status).toBe(409);
    const body = await again.json();
    expect(body.error.code).toBe("ALREADY_PURCHASED");
    expect(body.error.message).toContain(theirOrder);

    // Nothing moves by itself (the queue lost those messages) until the scheduled re-drive runs.
    await new Promise((r) => setTimeout(r, 1_500));
    expect((await second.api.report(sale.id)).d1.confirmed).toBe(settledBefore.size);
    const report = await second.drain(sale.id, STOCK);
    expect(report.d1).toMatchObject({ confirmed: STOCK, failed: 0, soldCounter: STOCK });
    expect(report.redis.remaining).toBe(0);
    expect(report.oversold).toBe(0);
    expect(report.reconciled).toBe(true);
    expect(await d1Orders(second, sale.id)).toEqual(accepted);

    // More re-drives and their duplicates change nothing.
    await second.worker.scheduled();
    await new Promise((r) => setTimeout(r, 1_200));
    await second.worker.scheduled();
    const after = await second.api.report(sale.id);
    expect(after.d1).toMatchObject({ confirmed: STOCK, failed: 0, soldCounter: STOCK });
    expect(after.reconciled).toBe(true);
    expect(await d1Orders(second, sale.id)).toEqual(accepted);

    console.log(
      `crash: ${settledBefore.size}/${STOCK} orders in D1 when the stack died, ${before.redis.outbox} outbox records ` +
        `(${before.redis.outbox - before.pending} of them already settled); all ${STOCK} settled once after restart`,
    );
  });
});
