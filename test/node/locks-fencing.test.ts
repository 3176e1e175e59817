// Fencing end to end: a holder whose lease lapsed (its Redis hop made slow at the gateway,
// as a paused or partitioned holder would be) sees its signal abort, a second holder takes
// the lock, and the first holder's late write is refused by D1 (Miniflare's local D1 with
// the project's migrations). And a Redis that comes back behind (restarted from a snapshot
// taken before a lock was granted) hands the same token out again: D1 refuses the second
// holder of it.
import { copyFileSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { Redis } from "@upstash/redis";
import { Redis as IORedis } from "ioredis";
import { Miniflare } from "miniflare";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Gateway, startGateway } from "../../dev/gateway/server.ts";
import { ROOT } from "../../dev/lib/project.ts";
import { type RedisServer, startRedisServer } from "../../dev/lib/redis-server.ts";
import { aborted, eventually } from "../../dev/lib/wait.ts";
import {
  type FencedLease,
  fencedBatch,
  type Lease,
  Lock,
  LockLostError,
  lockKeys,
  StaleFenceError,
} from "../../src/locks/index.ts";

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
const write = (resource: string, lease: FencedLease, holder: string) =>
  fencedBatch(db, resource, lease, [
    db
      .prepare("INSERT INTO restore_log (resource, holder) VALUES (?1, ?2) ON CONFLICT (resource) DO UPDATE SET holder = ?2")
      .bind(resource, holder),
  ]);
const holderOf = (resource: string) =>
  db.prepare("SELECT holder FROM restore_log WHERE resource = ?").bind(resource).first("holder");
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
        await write(resource, lease, "first");
        // From now on the first holder's Redis hop takes 1 s (the most the gateway adds),
        // over twice its lease: its renewals cannot land in time.
        await setLatency(gatewayA, 1_000);
        await aborted(signal);
        abortedAt = performance.now();
        secondHolder = new Lock(client(gatewayB), name).tryAcquire({ leaseMs: 5_000, waitMs: 5_000 }).then(async (second) => {
          secondAcquiredAt = performance.now();
          if (!second) throw new Error("the second holder never got the lock");
          await write(resource, second, "second");
          return second;
        });
        const second = await secondHolder;
        // The first holder wakes up and writes anyway, as a holder that ignores its signal would.
        lateWrite = await write(resource, lease, "first, late").catch((err: unknown) => err);
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
  expect((lateWrite as StaleFenceError).reason).toBe("lower");
  const second = await (secondHolder as Promise<Lease>);
  expect(second.fence).toBeGreaterThan(0);
  // The late write changed nothing: not the row written in its batch, not the fence.
  expect(await holderOf(resource)).toBe("second");
  expect(await fenceOf(resource)).toBe(second.fence);
});

it("fencedBatch keeps the highest token per resource: higher passes, equal only from the same holder, lower never", async () => {
  const resource = `fence-order:${Date.now()}`;
  const five = { fence: 5, holder: "holder-a" };
  await write(resource, five, "five");
  await write(resource, five, "five again"); // one holder writing twice
  await expect(write(resource, { fence: 5, holder: "holder-b" }, "five, another holder")).rejects.toMatchObject({
    name: "StaleFenceError",
    reason: "reused",
  });
  await write(resource, { fence: 9, holder: "holder-c" }, "nine");
  await expect(write(resource, { fence: 8, holder: "holder-d" }, "eight")).rejects.toMatchObject({
    name: "StaleFenceError",
    reason: "lower",
  });
  await write(`${resource}:other`, { fence: 1, holder: "holder-e" }, "another resource has its own fence");
  expect(await fenceOf(resource)).toBe(9);
  expect(await holderOf(resource)).toBe("nine");
  await expect(write(resource, { fence: undefined, holder: "quorum" }, "no token")).rejects.toBeInstanceOf(TypeError);
});

it("a Redis that comes back behind hands a token out again, and D1 refuses its second holder", async () => {
  // A server that keeps only the snapshots it is told to take: restarted, it is back as of
  // the last one, as after a failover to a replica that had not yet seen the last writes.
  const dataDir = mkdtempSync(path.join(tmpdir(), "fence-failover-"));
  const behind = await startRedisServer({ dataDir, snapshotsOnly: true });
  const gateway = await startGateway({ redisUrl: behind.url, token: TOKEN });
  const direct = new IORedis(behind.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
  direct.on("error", () => {}); // while the server is down
  try {
    await direct.connect();
    const resource = `failover:${Date.now()}`;
    const lock = new Lock(client(gateway), resource);
    const take = async () => (await lock.tryAcquire({ leaseMs: 10_000 })) as Lease;
    const earlier = await take(); // the lock has been used before the snapshot
    await earlier.release();
    await direct.save();
    const snapshot = path.join(dataDir, "before-grant.rdb");
    copyFileSync(path.join(dataDir, "dump.rdb"), snapshot);

    const first = await take();
    await write(resource, first, "first");
    expect(Number(await direct.get(lockKeys(resource).fence))).toBe(first.fence);

    // The failover: the server dies with the grant unsaved and comes back from the snapshot.
    await behind.kill();
    copyFileSync(snapshot, path.join(dataDir, "dump.rdb"));
    await behind.restart();
    const answers = (ping: () => Promise<string>) =>
      ping().then(
        (reply) => reply === "PONG",
        () => false,
      );
    await eventually(
      "the gateway and the test back on the restarted server",
      async () => (await answers(() => client(gateway).ping())) && answers(() => direct.ping()),
      30_000,
    );
    expect(Number(await direct.get(lockKeys(resource).fence))).toBe(earlier.fence);

    // The first holder's lock is gone with the lost writes: a second holder takes it and is handed the same token.
    const second = await take();
    expect(second.fence).toBe(first.fence);
    expect(second.holder).not.toBe(first.holder);
    const refused = await write(resource, second, "second").catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(StaleFenceError);
    expect((refused as StaleFenceError).reason).toBe("reused");
    expect(await holderOf(resource)).toBe("first");
    // The first holder, still working under its token, is not refused: it is the one D1 knows.
    await write(resource, first, "first, again");
    expect(await holderOf(resource)).toBe("first, again");
    // Once the counter passes the highest token D1 has seen, the next holder writes.
    await second.release();
    const third = await take();
    expect(third.fence).toBeGreaterThan(first.fence as number);
    await write(resource, third, "third");
    expect(await holderOf(resource)).toBe("third");
  } finally {
    direct.disconnect();
    await gateway.close();
    await behind.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
