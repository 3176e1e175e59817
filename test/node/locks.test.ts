// The lock library (src/locks/) on a real redis-server, through the project's Upstash
// gateway in its own process (round trips counted there, latency injected there), called
// with @upstash/redis as a Worker calls it.
import { Redis } from "@upstash/redis";
import { Redis as IORedis } from "ioredis";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type GatewayProcess, spawnGateway } from "../../dev/gateway/process.ts";
import { type RedisServer, startRedisServer } from "../../dev/lib/redis-server.ts";
import { aborted, eventually } from "../../dev/lib/wait.ts";
import {
  ExpirableSemaphore,
  type Lease,
  Lock,
  LockLostError,
  LockTimeoutError,
  MultiLock,
  ReentrantLock,
} from "../../src/locks/index.ts";
import { lockKeys, reentrantLockKeys } from "../../src/locks/keys.ts";

let server: RedisServer;
let gateway: GatewayProcess;
let redis: Redis;
let direct: IORedis;
let seq = 0;
const fresh = (what: string) => `${what}-${++seq}-${Date.now().toString(36)}`;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/**
 * A waiter's retry backoff where a test shows that a release wakes it: so long that only the
 * release message can hand it the lock before the backoff ends, on a machine of any speed.
 */
const BACKOFF_MS = 20_000;

beforeAll(async () => {
  server = await startRedisServer();
  gateway = await spawnGateway({ redisUrl: server.url, token: "locks-test-token" });
  redis = new Redis({ url: gateway.url, token: gateway.token, enableTelemetry: false, automaticDeserialization: false });
  direct = new IORedis(server.url);
  // Load every script once, so the counts below never include an EVAL fallback.
  const warm = (await new Lock(redis, "warm-up").tryAcquire({ leaseMs: 1_000 })) as Lease;
  await warm.renew();
  await warm.release();
  const rl = new ReentrantLock(redis, "warm-up");
  await rl.acquire("o", { leaseMs: 1_000 });
  await rl.release("o");
  const sem = new ExpirableSemaphore(redis, "warm-up", 1);
  await (await sem.tryAcquire({ leaseMs: 1_000 }))?.release();
  await sem.available();
});
afterAll(async () => {
  await new Promise((resolve) => setTimeout(resolve, 300)); // shared subscriptions linger 250 ms after their last waiter
  direct?.disconnect();
  await gateway?.stop();
  await server?.stop();
});
beforeEach(async () => {
  await gateway.setLatency(0);
});

/** Gateway round trips taken by `action`. */
async function roundTrips(action: () => Promise<unknown>): Promise<number> {
  await gateway.resetStats();
  await action();
  return (await gateway.stats()).requests;
}

describe("Lock", () => {
  it("costs one round trip to acquire and one to release, and mints strictly increasing fencing tokens", async () => {
    const lock = new Lock(redis, fresh("rt"));
    const fences: number[] = [];
    for (let i = 0; i < 3; i++) {
      let lease: Lease | undefined;
      expect(
        await roundTrips(async () => {
          lease = await lock.tryAcquire({ leaseMs: 5_000 });
        }),
      ).toBe(1);
      fences.push(lease?.fence as number);
      expect(await roundTrips(async () => expect(await lease?.release()).toBe(true))).toBe(1);
    }
    expect(fences).toEqual([fences[0], (fences[0] as number) + 1, (fences[0] as number) + 2]);
  });

  it("refuses a second holder, and a release with another token changes nothing", async () => {
    const name = fresh("excl");
    const lock = new Lock(redis, name);
    const first = (await lock.tryAcquire({ leaseMs: 5_000 })) as Lease;
    expect(await lock.tryAcquire({ leaseMs: 5_000 })).toBeUndefined();
    const owner = await direct.get(lockKeys(name).lock);
    // A lease whose lock expired and was taken by someone else: its release must not free it.
    await direct.set(lockKeys(name).lock, "someone-else", "PX", 5_000);
    expect(await first.release()).toBe(false);
    expect(await direct.get(lockKeys(name).lock)).toBe("someone-else");
    expect(owner).not.toBe("someone-else");
  });

  it.each([
    ["fair", true],
    ["unfair", false],
  ])("wakes a %s waiter on the release message, far sooner than its backoff", async (_mode, fair) => {
    const lock = new Lock(redis, fresh("wake"));
    const holder = (await lock.tryAcquire({ leaseMs: 10_000 })) as Lease;
    // A long backoff: only the release message can wake the waiter before it ends, however
    // slow the machine (the assertion is against the backoff, not a fixed time).
    const retry = { baseMs: BACKOFF_MS, capMs: BACKOFF_MS };
    const waiting = lock.tryAcquire({ leaseMs: 10_000, waitMs: 2 * BACKOFF_MS, retry, fair }).then((lease) => ({
      lease,
      at: performance.now(),
    }));
    await sleep(300); // the waiter has tried, subscribed and tried again
    const releasedAt = performance.now();
    await holder.release();
    const { lease, at } = await waiting;
    const wakeUpMs = at - releasedAt;
    console.log(`${_mode} waiter woke ${wakeUpMs.toFixed(1)} ms after the release (backoff ${BACKOFF_MS} ms)`);
    expect(lease?.fence).toBe((holder.fence as number) + 1);
    expect(wakeUpMs).toBeLessThan(BACKOFF_MS / 2);
    await lease?.release();
  });

  it("a fair lock serves waiters in arrival order and never gives it back to the releaser", async () => {
    const name = fresh("fifo");
    const lock = new Lock(redis, name);
    const first = (await lock.tryAcquire({ leaseMs: 10_000 })) as Lease;
    const order: number[] = [];
    const waiters: Promise<void>[] = [];
    for (const i of [0, 1, 2]) {
      waiters.push(
        (async () => {
          const lease = (await lock.tryAcquire({ leaseMs: 10_000, waitMs: 30_000 })) as Lease;
          order.push(i);
          await sleep(5);
          await lease.release();
        })(),
      );
      // Arrive in order: the next waiter comes once this one holds its place in the queue
      // (waiters sent a few milliseconds apart may reach Redis in any order on a busy machine).
      await eventually(`waiter ${i} in the queue`, async () => (await redis.zcard(lockKeys(name).queue)) === i + 1);
    }
    await first.release();
    // The releaser comes straight back: it queues behind the three.
    const again = await lock.tryAcquire({ leaseMs: 10_000, waitMs: 30_000 });
    order.push(9);
    await again?.release();
    await Promise.all(waiters);
    expect(order).toEqual([0, 1, 2, 9]);
  });

  it("a waiter that gives up leaves the queue, and the next one still gets the lock", async () => {
    const lock = new Lock(redis, fresh("give-up"));
    const holder = (await lock.tryAcquire({ leaseMs: 10_000 })) as Lease;
    expect(await lock.tryAcquire({ leaseMs: 10_000, waitMs: 200 })).toBeUndefined();
    const patient = lock.tryAcquire({ leaseMs: 10_000, waitMs: 5_000 });
    await sleep(100);
    await holder.release();
    expect(await patient).toBeDefined();
    expect(await direct.zcard(lockKeys(lock.name).queue)).toBe(0);
  });
});

describe("using: lease renewal", () => {
  it("renews the lease while fn runs past it, and stops renewing when fn settles", async () => {
    const lock = new Lock(redis, fresh("renew"));
    const result = await lock.using(
      async (signal) => {
        await sleep(3_500); // more than two leases
        expect(signal.aborted).toBe(false);
        expect(await direct.pttl(lockKeys(lock.name).lock)).toBeGreaterThan(0);
        return "done";
      },
      // A renewal every 500 ms with 1.5 s to answer: a busy machine's stall does not lose it.
      { leaseMs: 1_500 },
    );
    expect(result).toBe("done");
    expect(await direct.exists(lockKeys(lock.name).lock)).toBe(0);
    expect(await roundTrips(() => sleep(400))).toBe(0); // no renewal after fn settled
  });

  it("aborts the signal the moment a renewal finds the lock gone, and rejects after fn settles", async () => {
    const lock = new Lock(redis, fresh("stolen"));
    const LEASE_MS = 3_000;
    let abortedAfterMs = Number.NaN;
    let markedLost: { before: unknown; after: unknown } | undefined;
    const outcome = lock
      .using(
        async (signal, lease) => {
          const start = performance.now();
          const before = lease.lost;
          await direct.del(lockKeys(lock.name).lock); // the lease is gone (an operator, an eviction)
          await aborted(signal);
          abortedAfterMs = performance.now() - start;
          markedLost = { before, after: lease.lost };
          return "finished anyway";
        },
        { leaseMs: LEASE_MS },
      )
      .catch((err: unknown) => err);
    const err = await outcome;
    expect(err).toBeInstanceOf(LockLostError);
    expect((err as LockLostError).reason).toBe("taken");
    expect(markedLost).toEqual({ before: undefined, after: "taken" }); // marked lost as the signal aborts
    // Found by a renewal (every third of the lease), before the lease would have run out.
    expect(abortedAfterMs).toBeLessThan(LEASE_MS);
  });

  it("maxHoldMs stops renewal and aborts a hung fn; the lock lapses within a lease", async () => {
    const lock = new Lock(redis, fresh("max-hold"));
    const LEASE_MS = 3_000;
    const MAX_HOLD_MS = 2_000;
    const key = lockKeys(lock.name).lock;
    const started = performance.now();
    let abortedAt = Number.NaN;
    let ttlAtAbort = Number.NaN;
    let lapsedWhileHung = false;
    const outcome = lock
      .using(
        async (signal) => {
          await aborted(signal);
          abortedAt = performance.now() - started;
          ttlAtAbort = await direct.pttl(key);
          // Hung past the abort: the lock must lapse without this fn's help (no renewal, no
          // release). Read here, asserted below: using() wraps what fn throws in its LockLostError.
          lapsedWhileHung = await eventually(
            "the hung holder's lock to lapse",
            async () => (await direct.exists(key)) === 0,
            30_000,
          );
        },
        // One renewal (at a third of the lease) before max-hold; a renewal must be over a
        // second late to lose the lease first, so the reason is max-hold on a busy machine too.
        { leaseMs: LEASE_MS, maxHoldMs: MAX_HOLD_MS },
      )
      .catch((err: unknown) => err);
    const err = await outcome;
    expect(err).toBeInstanceOf(LockLostError);
    expect((err as LockLostError).reason).toBe("max-hold");
    expect(abortedAt).toBeGreaterThanOrEqual(MAX_HOLD_MS - 10); // not before maxHoldMs (its end is the reason above)
    // Not renewed at or after the abort: at most one lease is left (-2 when it already lapsed).
    expect(ttlAtAbort).toBeLessThanOrEqual(LEASE_MS);
    expect(lapsedWhileHung).toBe(true);
  });

  it("throws LockTimeoutError when the lock stays taken", async () => {
    const lock = new Lock(redis, fresh("timeout"));
    const holder = await lock.tryAcquire({ leaseMs: 5_000 });
    await expect(lock.using(async () => "never", { leaseMs: 1_000, waitMs: 100 })).rejects.toBeInstanceOf(LockTimeoutError);
    await holder?.release();
  });
});

describe("ReentrantLock", () => {
  it("counts holds per owner, refreshes the lease on re-entry, and frees the key at zero", async () => {
    const name = fresh("reentrant");
    const key = reentrantLockKeys(name).lock;
    const lock = new ReentrantLock(redis, name);
    const first = await lock.acquire("task-a", { leaseMs: 1_000 });
    await sleep(300);
    const reentryAsked = performance.now();
    const again = await lock.acquire("task-a", { leaseMs: 1_000 });
    expect(first?.holdCount).toBe(1);
    expect(again).toEqual({ fence: first?.fence, holdCount: 2 });
    // Refreshed by the re-entry: a whole lease from then on, less the time since it was asked
    // for (unrefreshed, at least the 300 ms slept would be gone too), 1 ms for rounding.
    const ttl = await direct.pttl(key);
    expect(ttl).toBeGreaterThanOrEqual(1_000 - (performance.now() - reentryAsked) - 1);
    expect(await lock.acquire("task-b", { leaseMs: 1_000 })).toBeUndefined();

    // A non-owner's release changes nothing, and says so.
    expect(await lock.release("task-b")).toEqual({ owner: false });
    expect(await direct.hgetall(key)).toEqual({ "task-a": "2" });

    expect(await lock.release("task-a")).toEqual({ owner: true, holdsLeft: 1 });
    expect(await direct.exists(key)).toBe(1);
    expect(await lock.release("task-a")).toEqual({ owner: true, holdsLeft: 0 });
    expect(await direct.exists(key)).toBe(0);
    expect(await lock.release("task-a")).toEqual({ owner: false });

    const next = await lock.acquire("task-b", { leaseMs: 1_000 });
    expect(next).toEqual({ fence: (first?.fence as number) + 1, holdCount: 1 });
    await lock.release("task-b");
  });

  it("nested using() by one owner re-enters, and a waiter wakes when the last hold goes", async () => {
    const lock = new ReentrantLock(redis, fresh("nested"));
    let waiterGotItAt = Number.NaN;
    let releasedAt = Number.NaN;
    const waiter = (async () => {
      await sleep(50);
      const retry = { baseMs: BACKOFF_MS, capMs: BACKOFF_MS };
      const hold = await lock.acquire("other", { leaseMs: 5_000, waitMs: 2 * BACKOFF_MS, retry });
      waiterGotItAt = performance.now();
      return hold;
    })();
    await lock.using(
      "request-1",
      () => lock.using("request-1", async (_signal, lease) => expect(lease.fence).toBeGreaterThan(0), { leaseMs: 5_000 }),
      { leaseMs: 5_000 },
    );
    releasedAt = performance.now();
    expect((await waiter)?.holdCount).toBe(1);
    expect(waiterGotItAt - releasedAt).toBeLessThan(BACKOFF_MS / 2); // woken by the release, not its backoff
    await lock.release("other");
  });
});

describe("MultiLock", () => {
  it("takes all or none, in sorted order, so overlapping sets in opposite orders never deadlock", async () => {
    const [a, b, c] = [fresh("ma"), fresh("mb"), fresh("mc")];
    const held = (await new Lock(redis, b).tryAcquire({ leaseMs: 5_000 })) as Lease;
    expect(await new MultiLock(redis, [c, a, b]).tryAcquire({ leaseMs: 5_000, waitMs: 100 })).toBeUndefined();
    // None of the others stayed taken.
    expect(await direct.exists(lockKeys(a).lock, lockKeys(c).lock)).toBe(0);
    await held.release();

    let inside = 0;
    let maxInside = 0;
    const worker = async (names: string[]) => {
      for (let i = 0; i < 15; i++) {
        await new MultiLock(redis, names).using(
          async () => {
            maxInside = Math.max(maxInside, ++inside);
            await sleep(1);
            inside--;
          },
          { leaseMs: 5_000, waitMs: 10_000 },
        );
      }
    };
    await Promise.all([worker([a, b]), worker([b, a]), worker([c, b, a])]);
    expect(maxInside).toBe(1);
  });
});

describe("ExpirableSemaphore", () => {
  it("hands out N permits with ids, releases by id, and a lapsed permit returns by itself", async () => {
    const sem = new ExpirableSemaphore(redis, fresh("sem"), 2);
    const p1 = await sem.tryAcquire({ leaseMs: 5_000 });
    // p2's lease starts after it is asked for, so it lapses no sooner than 400 ms after this
    // (however long the calls between take on a busy machine).
    const p2Asked = performance.now();
    const p2 = await sem.tryAcquire({ leaseMs: 400 }); // never released: it lapses
    expect(p1?.id).not.toBe(p2?.id);
    expect(await sem.available()).toBe(0);
    expect(await sem.tryAcquire({ leaseMs: 5_000 })).toBeUndefined();

    const p3 = await sem.tryAcquire({ leaseMs: 5_000, waitMs: 3_000 });
    expect(p3).toBeDefined();
    expect(performance.now() - p2Asked).toBeGreaterThanOrEqual(399); // it waited for p2 to lapse (1 ms: clock rounding)
    expect(await sem.release(p2?.id as string)).toBe(false); // lapsed already

    // Released by id, it wakes a waiter at once.
    const waiting = sem.tryAcquire({ leaseMs: 5_000, waitMs: 2 * BACKOFF_MS, retry: { baseMs: BACKOFF_MS, capMs: BACKOFF_MS } });
    await sleep(200);
    const releasedAt = performance.now();
    expect(await sem.release(p1?.id as string)).toBe(true);
    const p4 = await waiting;
    expect(performance.now() - releasedAt).toBeLessThan(BACKOFF_MS / 2); // woken by the release, not its backoff
    expect(await sem.release(p1?.id as string)).toBe(false);
    expect(await p3?.renew()).toBe(true);
    await p3?.release();
    await p4?.release();
    expect(await sem.available()).toBe(2);
  });
});

describe("a randomized schedule", () => {
  // 2,000 holds: every contender waits behind the others many times over, in a few seconds
  // on a busy machine (5,000 took 44 s there and found nothing more).
  it("50 contenders x 40 acquisitions, random holds and injected latency: the fenced log shows no overlap", async () => {
    const CONTENDERS = 50;
    const ACQUISITIONS = 40;
    const lock = new Lock(redis, fresh("schedule"));
    /** One entry per hold, in the order holds began: who, its fencing token, when it entered and left. */
    const log: { contender: number; fence: number; enter: number; exit: number }[] = [];
    let holder: number | undefined;
    let overlaps = 0;
    // Latency at the gateway changes every 100 ms: mostly none, a third of the time an emulated hop of 1 to 3 ms.
    let running = true;
    const latency = (async () => {
      while (running) {
        await gateway.setLatency(Math.random() < 2 / 3 ? 0 : 1 + Math.floor(Math.random() * 3));
        await sleep(100);
      }
    })();
    const contender = async (id: number) => {
      for (let i = 0; i < ACQUISITIONS; i++) {
        const lease = await lock.tryAcquire({ leaseMs: 10_000, waitMs: 200_000 }); // within the test's own timeout
        if (!lease) throw new Error(`contender ${id} gave up`);
        if (holder !== undefined) overlaps++;
        holder = id;
        const entry = { contender: id, fence: lease.fence as number, enter: performance.now(), exit: 0 };
        log.push(entry);
        // Most holds end at once; some wait a turn of the event loop or a millisecond.
        if (Math.random() < 0.3) await sleep(Math.random() < 0.5 ? 0 : 1);
        entry.exit = performance.now();
        holder = undefined;
        expect(await lease.release()).toBe(true);
      }
    };
    const started = performance.now();
    try {
      await Promise.all(Array.from({ length: CONTENDERS }, (_, id) => contender(id)));
    } finally {
      running = false;
      await latency;
    }
    const seconds = (performance.now() - started) / 1000;
    console.log(`${log.length} fenced holds in ${seconds.toFixed(1)} s (${(log.length / seconds).toFixed(0)}/s)`);
    expect(log).toHaveLength(CONTENDERS * ACQUISITIONS);
    expect(overlaps).toBe(0);
    for (let i = 1; i < log.length; i++) {
      const [before, after] = [log[i - 1], log[i]] as [(typeof log)[number], (typeof log)[number]];
      expect(after.fence).toBeGreaterThan(before.fence); // fences grow in the order holds began
      expect(after.enter).toBeGreaterThanOrEqual(before.exit); // and no hold began before the last one ended
    }
  });
});
