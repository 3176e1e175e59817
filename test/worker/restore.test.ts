// Redis loses a sale mid-sale; POST /admin/sales/:id/restore rebuilds it from D1 under the
// sale's fenced lock, and the sale goes on without overselling or selling twice to a buyer.
// Redis losing the sale is done for real: every key under the sale's hash tag is deleted
// (the suite shares one Redis, so FLUSHALL would take the other tests' sales too).
import { createScheduledController, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { lockKeys } from "../../src/locks";
import { redisFor } from "../../src/redis/client";
import { LUA, runScript } from "../../src/redis/scripts";
import { restoreLockName, restoreScriptKeys } from "../../src/settlement/restore";
import type { RestoreReport } from "../../src/shared/api-types";
import { bucketKeys, saleKeys } from "../../src/shared/keys";
import { api, createSale, d1Orders, eventually, fetchWithVars, internalId, redis, report, waitForConfirmed } from "./helpers";

const admin = { Authorization: `Bearer ${env.ADMIN_TOKEN}`, "Content-Type": "application/json" };
/** The restore, with RESTORE_QUIET_MS as given (the suite's orders land in milliseconds). */
const restore = (saleId: string, quietMs = "0") =>
  fetchWithVars({ RESTORE_QUIET_MS: quietMs }, `/admin/sales/${saleId}/restore`, { method: "POST", headers: admin });

/** Redis loses every key of the sale. */
async function loseSale(saleId: string): Promise<void> {
  let cursor = "0";
  do {
    const [next, keys] = (await redis.scan(cursor, { match: `fs:{sale:${saleId}}*`, count: 1_000 })) as [string, string[]];
    if (keys.length > 0) await redis.del(...keys);
    cursor = String(next);
  } while (cursor !== "0");
  expect(await redis.exists(saleKeys(saleId).meta)).toBe(0);
}

async function buy(saleId: string, user: string) {
  return api.checkout(saleId, await api.userToken(user));
}

describe("restore", () => {
  it("rebuilds a sale Redis lost from D1: the sale goes on, no oversell, no buyer twice, the report reconciled", async () => {
    const stock = 30;
    const sale = await createSale({ stock, paymentWindowSec: 600 });
    const before = new Map<string, string>();
    for (let i = 0; i < 12; i++) {
      const answer = await buy(sale.id, `before-${i}`);
      expect(answer.status).toBe(202);
      before.set(`before-${i}`, answer.orderId as string);
    }
    await waitForConfirmed([...before.values()]);
    for (const user of ["before-0", "before-1"]) {
      expect((await api.cancel(before.get(user) as string, await api.userToken(user))).status).toBe(200);
    }
    await loseSale(sale.id);
    expect((await buy(sale.id, "during")).status).toBe(503);

    // That 503 reported the loss, so the heal may rebuild the sale before this push does: then
    // the route finds it loaded, or the heal at work under the lock. Either way it is rebuilt
    // once, with the same figures.
    const res = await restore(sale.id);
    if (res.status === 200) {
      expect((await res.json()) as RestoreReport).toEqual({
        saleId: sale.id,
        remaining: 20,
        minted: 12,
        buyers: 10,
        returned: 2,
      });
    } else {
      expect(res.status).toBe(409);
      expect(["SALE_LOADED", "RESTORE_IN_PROGRESS"]).toContain(((await res.json()) as { error: { code: string } }).error.code);
    }
    const rebuilt = await eventually("the sale rebuilt", async () => {
      const now = await report(sale.id);
      return now.redis.loaded && now;
    });
    expect(rebuilt.redis).toMatchObject({ loaded: true, remaining: 20, minted: 12, buyers: 10, returned: 2 });

    // Holders stay at their limit; those who cancelled, and new buyers, share what is left.
    expect((await buy(sale.id, "before-5")).code).toBe("ALREADY_PURCHASED");
    const after = new Map<string, string>();
    const crowd = ["before-0", "before-1", ...Array.from({ length: 40 }, (_, i) => `after-${i}`)];
    const answers = await Promise.all(crowd.map(async (user) => [user, await buy(sale.id, user)] as const));
    for (const [user, answer] of answers) {
      if (answer.status === 202) after.set(user, answer.orderId as string);
      else expect(answer.code).toBe("SOLD_OUT");
    }
    expect(after.size).toBe(20);
    await waitForConfirmed([...after.values()]);

    // The invariants: sold <= stock, one holding order per buyer, every order id distinct, all settled once.
    const ids = [...before.values(), ...after.values()];
    expect(new Set(ids).size).toBe(ids.length);
    const rows = await d1Orders(sale.id);
    expect(rows.map((r) => r.order_id).sort()).toEqual([...ids].map(internalId).sort());
    const r = await eventually("the outbox to drain", async () => {
      const now = await report(sale.id);
      return now.redis.outbox === 0 && now;
    });
    expect(r).toMatchObject({ oversold: 0, pending: 0, reconciled: true });
    expect(r.redis.remaining).toBe(0);
    expect(r.d1.soldCounter).toBe(stock);
  });

  it("waits for orders still reaching D1, restores once when two run at once, and refuses a sale Redis holds", async () => {
    const sale = await createSale({ stock: 5 });
    const first = await buy(sale.id, "lands");
    await waitForConfirmed([first.orderId as string]);
    await loseSale(sale.id);
    const early = await restore(sale.id, "30000");
    expect(early.status).toBe(409);
    expect(((await early.json()) as { error: { code: string } }).error.code).toBe("ORDERS_IN_FLIGHT");
    expect(Number(early.headers.get("Retry-After"))).toBeGreaterThan(0);

    const both = await Promise.all([restore(sale.id), restore(sale.id)]);
    const codes = await Promise.all(
      both.map(async (res) => (res.status === 200 ? "OK" : ((await res.json()) as { error: { code: string } }).error.code)),
    );
    expect(codes.filter((c) => c === "OK")).toHaveLength(1);
    expect(codes.filter((c) => c !== "OK").every((c) => c === "RESTORE_IN_PROGRESS" || c === "SALE_LOADED")).toBe(true);
    // Rebuilt once: a second rebuild would have counted the landed order's unit as free again.
    const restored = await report(sale.id);
    expect(restored.redis).toMatchObject({ remaining: 4, minted: 1, buyers: 1 });
    expect(restored).toMatchObject({ oversold: 0, reconciled: true });
    expect((await restore(sale.id)).status).toBe(409); // SALE_LOADED
    expect((await buy(sale.id, "lands")).code).toBe("ALREADY_PURCHASED");
    expect((await buy(sale.id, "next")).status).toBe(202);
  });

  it("a restore whose lock moved on writes nothing more (its fence is stale)", async () => {
    const sale = await createSale();
    await loseSale(sale.id);
    const keys = bucketKeys(sale.id, 0, 1);
    const scriptKeys = restoreScriptKeys(sale.id, [keys.buyers]);
    await redis.set(lockKeys(restoreLockName(sale.id)).fence, "7");
    await expect(runScript(redisFor(env), LUA.restore, scriptKeys, ["6", "hash", "u", "1:1"])).rejects.toThrow(/STALE_FENCE/);
    expect(await redis.exists(keys.buyers)).toBe(0);
    expect(await runScript(redisFor(env), LUA.restore, scriptKeys, ["7", "hash", "u", "1:1"])).toBe(1);
  });

  it("an operator's change to a sale Redis lost waits for the restore, which applies it", async () => {
    const sale = await createSale({ stock: 5 });
    await loseSale(sale.id);
    const paused = await api.setSaleState(sale.id, "pause");
    expect([paused.status, paused.code]).toEqual([409, "SALE_NOT_LOADED"]);
    expect(await redis.exists(saleKeys(sale.id).meta)).toBe(0); // not re-created from scratch
    expect((await restore(sale.id)).status).toBe(200);
    expect((await buy(sale.id, "someone")).code).toBe("SALE_PAUSED");
  });

  it("the cron finds a sale Redis holds behind D1, stops it and rebuilds it, with no admin call", async () => {
    const stock = 6;
    const sale = await createSale({ stock });
    const bought = new Map<string, string>();
    for (const user of ["a", "b", "c"]) bought.set(user, (await buy(sale.id, user)).orderId as string);
    await waitForConfirmed([...bought.values()]);
    // Redis comes back from a copy taken before those orders: what a failover to a replica
    // that missed the last writes leaves (the sale is there; its stock, buyers and sequence are old).
    await redis.hset(saleKeys(sale.id).meta, { remaining: stock, seq: 0 });
    await redis.del(bucketKeys(sale.id, 0, 1).buyers);

    await worker.scheduled(createScheduledController(), { ...env, RESTORE_QUIET_MS: "0" });
    const health = (await report(sale.id)).health;
    expect(health).toMatchObject({ state: "live", detectedBy: "cron", rebuilds: 1, failedByRollback: 0 });
    expect(health.rebuiltAt).not.toBeNull();
    // Rebuilt from D1: the three units and their buyers are back where they belong.
    expect((await report(sale.id)).redis).toMatchObject({ loaded: true, remaining: stock - 3, minted: 3, buyers: 3 });
    expect((await buy(sale.id, "a")).code).toBe("ALREADY_PURCHASED");
    const next = await buy(sale.id, "d");
    expect(next.status).toBe(202);
    expect([...bought.values()]).not.toContain(next.orderId);
  });
});
