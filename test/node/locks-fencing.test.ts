// Fencing end to end: a holder whose lease lapsed (its Redis hop made slow at the gateway,
// as a paused or partitioned holder would be) sees its signal abort, a second holder takes
// the lock, and the first holder's late write is refused by D1 (Miniflare's local D1 with
// the project's migrations).
import path from "node:path";
import { readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { Redis } from "@upstash/redis";
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Gateway, startGateway } from "../../dev/gateway/server.ts";
import { ROOT } from "../../dev/lib/project.ts";
import { type RedisServer, startRedisServer } from "../../dev/lib/redis-server.ts";
import { fencedBatch, type Lease, Lock, LockLostError, StaleFenceError } from "../../src/locks/index.ts";

const TOKEN = "fencing-test-token";
let server: RedisServer;
let gatewayA: Gateway;
let gatewayB: Gateway;
let mf: Miniflare;
type D1 = Awaited<ReturnType<Miniflare["getD1Database"]>>;
let db: D1;

beforeAll(async () => {
  server = await startRedisServer();
  gatewayA = await startGateway({ redisUrl: server.url, token: TOKEN });
  gatewayB = await startGateway({ redisUrl: server.url, token: TOKEN });
  // An in-memory D1 with the project's migrations, split into statements as wrangler does.
  mf = new Miniflare({
    modules: true,
    script: "export default { fetch: () => new Response(null) }",
    d1Databases: { DB: "00000000-0000-0000-0000-000000000000" },
  });
  db = await mf.getD1Database("DB");
  for (const migration of await readD1Migrations(path.join(ROOT, "migrations"))) {
    for (const query of migration.queries) await db.prepare(query).run();
  }
  await db.prepare("CREATE TABLE restore_log (resource TEXT PRIMARY KEY, holder TEXT NOT NULL)").run();
});
afterAll(async () => {
  await new Promise((resolve) => setTimeout(resolve, 300)); // shared subscriptions linger 250 ms after their last waiter
  await mf?.dispose();
  await gatewayA?.close();
  await gatewayB?.close();
  await server?.stop();
});

const client = (gateway: Gateway) => new Redis({ url: gateway.url, token: TOKEN, enableTelemetry: false });
const setLatency = async (gateway: Gateway, ms: number) => {
  const res = await fetch(`${gateway.url}/__gateway/latency?ms=${ms}`, {
    method: "POST",
    headers: { Authorization: `Bearer ${TOKEN}` },
  });
  expect(res.ok).toBe(true);
};
/** The write a holder makes under the lock: one row, fenced. */
const write = (resource: string, fence: number, holder: string) =>
  fencedBatch(db, resource, fence, [
    db
      .prepare("INSERT INTO restore_log (resource, holder) VALUES (?1, ?2) ON CONFLICT (resource) DO UPDATE SET holder = ?2")
      .bind(resource, holder),
  ]);
const fenceOf = async (resource: string) =>
  (await db.prepare("SELECT token FROM fences WHERE resource = ?").bind(resource).first<number>("token")) ?? undefined;

it("a holder paused past its lease is aborted, a second holder takes over, and D1 refuses the first one's late write", async () => {
  const resource = `sale:${Date.now()}`;
  const name = `restore:${resource}`;
  const leaseMs = 400;
  let abortedAt = Number.NaN;
  let secondAcquiredAt = Number.NaN;
  let lateWrite: unknown;
  let secondHolder: Promise<Lease> | undefined;

  const first = new Lock(client(gatewayA), name)
    .using(
      async (signal, lease) => {
        await write(resource, lease.fence as number, "first");
        // From now on the first holder's Redis hop takes 1 s (the most the gateway adds),
        // over twice its lease: its renewals cannot land in time.
        await setLatency(gatewayA, 1_000);
        await new Promise((resolve) => signal.addEventListener("abort", resolve));
        abortedAt = performance.now();
        secondHolder = new Lock(client(gatewayB), name).tryAcquire({ leaseMs: 5_000, waitMs: 5_000 }).then(async (second) => {
          secondAcquiredAt = performance.now();
          if (!second) throw new Error("the second holder never got the lock");
          await write(resource, second.fence as number, "second");
          return second;
        });
        const second = await secondHolder;
        // The first holder wakes up and writes anyway, as a holder that ignores its signal would.
        lateWrite = await write(resource, lease.fence as number, "first, late").catch((err: unknown) => err);
        await setLatency(gatewayA, 0);
        await second.release();
        return lease.fence;
      },
      { leaseMs },
    )
    .catch((err: unknown) => err);

  const outcome = await first;
  expect(outcome).toBeInstanceOf(LockLostError);
  expect((outcome as LockLostError).reason).toBe("expired");
  // The first holder knew it had lost the lock before anyone else could have it.
  expect(abortedAt).toBeLessThanOrEqual(secondAcquiredAt);
  expect(lateWrite).toBeInstanceOf(StaleFenceError);
  const second = await (secondHolder as Promise<Lease>);
  expect(second.fence).toBeGreaterThan(0);
  // The late write changed nothing: not the row written in its batch, not the fence.
  expect(await db.prepare("SELECT holder FROM restore_log WHERE resource = ?").bind(resource).first("holder")).toBe("second");
  expect(await fenceOf(resource)).toBe(second.fence);
});

it("fencedBatch keeps the highest token per resource: equal and higher pass, lower is refused", async () => {
  const resource = `fence-order:${Date.now()}`;
  await write(resource, 5, "five");
  await write(resource, 5, "five again"); // one holder writing twice
  await write(resource, 9, "nine");
  await expect(write(resource, 8, "eight")).rejects.toBeInstanceOf(StaleFenceError);
  await write(`${resource}:other`, 1, "another resource has its own fence");
  expect(await fenceOf(resource)).toBe(9);
  expect(await db.prepare("SELECT holder FROM restore_log WHERE resource = ?").bind(resource).first("holder")).toBe("nine");
});
