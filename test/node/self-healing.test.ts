// Redis loses a sale in the middle of a crowd, for real, and nobody is there: no admin call
// anywhere. Flushed: a real FLUSHALL on the stack's redis-server. Rolled back: the real
// redis-server killed and started again from a copy of its append-only file taken seconds
// earlier, while buyers keep buying (what a failover to a replica that missed the last writes
// does). The Worker on Miniflare, the gateway, local D1 and Queues are all real. The heal
// comes from the first detector's job on the jobs queue; the cron is never run here.
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { orderIdCipher } from "../../dev/lib/order-ids.ts";
import { eventually } from "../../dev/lib/wait.ts";
import { type Stack, startStack, waitForDrain } from "../../dev/stack/local-stack.ts";
import { saleKeys } from "../../src/shared/keys.ts";

/** Buyers are told to come back in seconds; here they do after a moment, to keep the test short. */
const RETRY_PAUSE_MS = 150;
/** Buyers at the door at once. */
const CONCURRENCY = 16;
/**
 * The fallback bound when nobody reported a sequence: long, so a heal that comes earlier
 * shows the better signal (every id reported minted has landed in D1) at work.
 */
const QUIET_MS = "60000";

let stack: Stack;
let dataDir: string;
/** Straight to redis-server, as an operator's shell would be: the gateway may refuse admin commands. */
let direct: Redis;
const workerLogs: { level: string; message: string }[] = [];

beforeAll(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), "flash-heal-"));
  stack = await startStack({
    redisDataDir: dataDir,
    vars: { RESTORE_QUIET_MS: QUIET_MS, OUTBOX_REDRIVE_AFTER_MS: "1000" },
    onWorkerLog: (log) => {
      workerLogs.push(log);
    },
  });
  direct = new Redis(stack.redis.url, { maxRetriesPerRequest: 1, lazyConnect: true });
});
afterAll(async () => {
  direct?.disconnect();
  await stack?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Accepted {
  user: string;
  orderId: string;
}

/**
 * A crowd of one-unit buyers, CONCURRENCY at a time: each tries until it gets a 202 or a 409
 * (sold out, already bought); a 503 must carry Retry-After, and nothing else may come back.
 * A buyer who got a 202 comes back once later, to try for a second unit (the limit is one).
 * `during` runs once `faultAfter` orders were accepted, while the others keep buying.
 */
async function crowd(saleId: string, users: string[], faultAfter: number, during: (accepted: Accepted[]) => Promise<void>) {
  const accepted: Accepted[] = [];
  const unavailable = new Set<string>();
  let fault: Promise<void> | undefined;
  const queue = [...users];
  const cameBack = new Set<string>();
  const buyer = async () => {
    for (let user = queue.shift(); user !== undefined; user = queue.shift()) {
      const token = await stack.api.userToken(user);
      for (;;) {
        const answer = await stack.api.checkout(saleId, token);
        if (answer.status === 202) {
          accepted.push({ user, orderId: answer.orderId as string });
          if (accepted.length === faultAfter) fault = during(accepted);
          if (!cameBack.has(user)) {
            cameBack.add(user);
            queue.push(user);
          }
          break;
        }
        if (answer.status === 409) {
          expect(["SOLD_OUT", "ALREADY_PURCHASED"]).toContain(answer.code);
          break;
        }
        expect({ status: answer.status, code: answer.code }).toEqual({ status: 503, code: "UNAVAILABLE" });
        expect(answer.headers?.get("Retry-After")).toMatch(/^[1-9][0-9]*$/);
        unavailable.add(user);
        await sleep(RETRY_PAUSE_MS);
      }
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, buyer));
  await fault;
  return { accepted, unavailable };
}

interface Ledger {
  confirmed: Map<string, { userId: string }>;
  failed: Map<string, { userId: string; reason: string }>;
}

async function ledger(saleId: string): Promise<Ledger> {
  const orders = await stack.worker.query<{ order_id: string; user_id: string }>(
    "SELECT order_id, user_id FROM orders WHERE sale_id = ?",
    Number(saleId),
  );
  const failed = await stack.worker.query<{ order_id: string; user_id: string; reason: string }>(
    "SELECT order_id, user_id, reason FROM failed_orders WHERE sale_id = ?",
    Number(saleId),
  );
  // By the ids the buyers were given.
  const ids = orderIdCipher(stack.secrets.ORDER_ID_KEY);
  return {
    confirmed: new Map(
      orders.map((r: { order_id: string; user_id: string }) => [ids.toPublic(r.order_id), { userId: r.user_id }]),
    ),
    failed: new Map(
      failed.map((r: { order_id: string; user_id: string; reason: string }) => [
        ids.toPublic(r.order_id),
        { userId: r.user_id, reason: r.reason },
      ]),
    ),
  };
}

async function recovery(saleId: string) {
  const [row] = await stack.worker.query<{ state: string; detected_by: string; rebuilds: number }>(
    "SELECT state, detected_by, rebuilds FROM sale_recovery WHERE sale_id = ?",
    Number(saleId),
  );
  return row ?? null;
}

/**
 * The settled invariants: no order id twice among the 202s; every 202 settled once, or
 * failed with REDIS_ROLLBACK; D1 never above the stock nor a buyer above the limit (one).
 */
function expectAccounted(accepted: Accepted[], books: Ledger, stock: number) {
  const ids = accepted.map((a) => a.orderId);
  expect(new Set(ids).size, "an order id was handed out twice").toBe(ids.length);
  for (const { user, orderId } of accepted) {
    const settled = books.confirmed.get(orderId);
    const failed = books.failed.get(orderId);
    expect(Number(settled !== undefined) + Number(failed !== undefined), `order ${orderId} of ${user}`).toBe(1);
    if (settled) expect(settled.userId).toBe(user);
    if (failed) expect(failed).toEqual({ userId: user, reason: "REDIS_ROLLBACK" });
  }
  expect(books.confirmed.size).toBeLessThanOrEqual(stock);
  const holders = [...books.confirmed.values()].map((o) => o.userId);
  expect(new Set(holders).size, "a buyer holds two units").toBe(holders.length);
}

describe("Redis loses a sale mid-crowd and nobody is there", () => {
  it("flushed: the sale stops selling, comes back by itself, sells exactly its stock, and everything reconciles", async () => {
    const stock = 80;
    const sale = await stack.api.createSale({ stock, name: "flushed" });
    const users = Array.from({ length: 200 }, (_, i) => `flush-${sale.id}-${i}`);
    const { accepted, unavailable } = await crowd(sale.id, users, 30, async () => {
      await direct.flushall();
    });
    expect(unavailable.size, "nobody was refused while the sale was rebuilt").toBeGreaterThan(0);

    const books = await eventually(
      "every accepted order to settle",
      async () => {
        const b = await ledger(sale.id);
        return accepted.every((a) => b.confirmed.has(a.orderId) || b.failed.has(a.orderId)) && b;
      },
      60_000,
    );
    expectAccounted(accepted, books, stock);
    // Exactly the stock is held, and by the buyers who were told 202.
    expect(books.confirmed.size).toBe(stock);
    const report = await waitForDrain(stack.api, sale.id, accepted.length);
    expect(report.oversold).toBe(0);
    expect(report.reconciled).toBe(true);
    expect(await recovery(sale.id)).toMatchObject({ state: "live", detected_by: "checkout", rebuilds: 1 });
    expect(report.health).toMatchObject({
      state: "live",
      detectedBy: "checkout",
      rebuilds: 1,
      failedByRollback: books.failed.size,
    });
    expect(report.health.rebuiltAt).not.toBeNull();
    const heals = workerLogs.filter((l) => l.message.includes('"sale rebuilt from D1"') && l.message.includes(`"${sale.id}"`));
    expect(heals.length).toBe(1);
  });

  // Ids carry the millisecond of Redis' clock (src/shared/order-id.ts): the Redis that comes
  // back, within the same second as the writes it lost or not, mints none of the ids it lost.
  it("rolled back: a Redis restarted from a copy seconds old is detected and rebuilt; never oversold, no id twice, no buyer twice", async () => {
    const stock = 80;
    const sale = await stack.api.createSale({ stock, name: "rolled back" });
    const users = Array.from({ length: 200 }, (_, i) => `rollback-${sale.id}-${i}`);
    // Every write on disk at once, so the copy holds exactly what Redis held when it was taken.
    await direct.config("SET", "appendfsync", "always");
    const snapshot = path.join(dataDir, "..", `${path.basename(dataDir)}-snapshot`);
    let acceptedAtCopy = 0;
    const { accepted } = await crowd(sale.id, users, 15, async (sofar) => {
      cpSync(path.join(dataDir, "appendonlydir"), snapshot, { recursive: true });
      acceptedAtCopy = sofar.length;
      // Buyers keep buying for a while, then Redis fails over to the copy.
      await eventually("more orders after the copy", async () => sofar.length >= acceptedAtCopy + 15, 60_000);
      const seqBefore = Number(await direct.hget(saleKeys(sale.id).meta, "seq"));
      await stack.redis.kill();
      rmSync(path.join(dataDir, "appendonlydir"), { recursive: true, force: true });
      cpSync(snapshot, path.join(dataDir, "appendonlydir"), { recursive: true });
      await stack.redis.restart();
      // Behind for real: the sale is there, its sequence from before the last orders.
      const seqAfter = Number(await direct.hget(saleKeys(sale.id).meta, "seq"));
      expect(seqAfter).toBeGreaterThan(0);
      expect(seqAfter).toBeLessThan(seqBefore);
    });
    rmSync(snapshot, { recursive: true, force: true });

    const books = await eventually(
      "every accepted order to settle or fail",
      async () => {
        const b = await ledger(sale.id);
        return accepted.every((a) => b.confirmed.has(a.orderId) || b.failed.has(a.orderId)) && b;
      },
      60_000,
    );
    expectAccounted(accepted, books, stock);
    const report = await waitForDrain(stack.api, sale.id, books.confirmed.size + books.failed.size);
    expect(report.oversold).toBe(0);
    expect(report.d1.soldCounter).toBe(books.confirmed.size);
    expect(report.health).toMatchObject({ state: "live", failedByRollback: books.failed.size });
    const healed = await recovery(sale.id);
    expect(healed?.state).toBe("live");
    expect(healed?.rebuilds).toBeGreaterThanOrEqual(1);
    console.log(
      `rolled back: ${accepted.length} accepted (${acceptedAtCopy} at the copy); ` +
        `${books.confirmed.size} settled, ${books.failed.size} failed by the rollback; ` +
        `detected by ${healed?.detected_by}, ${healed?.rebuilds} rebuild(s)`,
    );
  });
});
