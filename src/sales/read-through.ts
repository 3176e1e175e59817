// Cache-aside between Redis and D1, with a guard against each way such a cache fails:
// penetration (ids that do not exist), avalanche (entries expiring together), breakdown (a
// hot entry expiring under load) and inconsistency (an old read written back after a change).
// docs/architecture.md, "Cache protection", names each failure, its guard and its test.

import type { SharedWork } from "../isolate/shared-work";
import { Lock, lockKeys } from "../locks";
import { type EntryKeys, type EntryRead, jittered, putEntry, readEntry, type Ttl } from "../redis/cache-entries";
import type { Redis } from "../redis/client";
import { log } from "../shared/log";

/** The guards, all on in production; a test or the bench turns one off to show what it prevents. */
export interface CacheGuards {
  /** Penetration: an id the cache does not know is looked up in the Bloom filter before D1. */
  bloom: boolean;
  /** Avalanche: every TTL is spread over ±20%, so entries written together expire apart. */
  jitter: boolean;
  /**
   * Breakdown: an entry goes stale (logical expiry) long before it is gone (hard TTL); the
   * stale copy is served while one caller, holding the entry's lock, rebuilds it. Off, an
   * entry is gone when it expires, and every reader that finds it gone reads D1.
   */
  rebuildOnce: boolean;
  /** Inconsistency: a write-back older than the entry there, or than the last eviction, is refused. */
  setIfNewer: boolean;
}

export const ALL_GUARDS: CacheGuards = { bloom: true, jitter: true, rebuildOnce: true, setIfNewer: true };

/** How far TTLs are spread either side. */
const TTL_JITTER = 0.2;
/** How long a rebuild may hold an entry's lock: a D1 read, with room to spare. */
const REBUILD_LEASE_MS = 5_000;
/** How long a reader of a missing entry waits for the caller rebuilding it before reading D1 itself. */
const MISSING_WAIT_MS = 1_000;
/** How often such a reader looks for the entry meanwhile: first soon, then at most this often. */
const POLL_MS = { first: 10, max: 100 };
/**
 * How one isolate's readers share a load: a reader waits this long for the request loading
 * an entry (a lock, a D1 read, a write-back; or the bounded wait above) before loading it itself.
 */
export const CACHE_LOAD_SHARING = { stallMs: MISSING_WAIT_MS + REBUILD_LEASE_MS, pollMs: 5 };

/** What a read needs around it: Redis, the guards, and where background work goes. */
export interface CacheContext {
  redis: Redis;
  guards: CacheGuards;
  /** Keeps background work (a stale entry's rebuild) alive after the response (ctx.waitUntil). */
  waitUntil(work: Promise<unknown>): void;
  /** Rebuilds and loads this isolate has in flight, by entry: one each, whatever the readers. */
  inFlight: SharedWork<unknown>;
}

/** One cached thing: where it lives, how long it keeps, and how to load it from D1. */
export interface CachedSource<T> {
  keys: EntryKeys;
  /** The lock one rebuilder holds; named so its keys share the entry's hash tag. */
  lockName: string;
  ttl: Ttl;
  /** How long "there is no such thing" is cached (penetration by repeated ids). */
  missTtl: Ttl;
  /** From D1; undefined when it does not exist. */
  load(): Promise<T | undefined>;
  /** Asked before D1 when the entry is missing: false when the thing certainly does not exist. */
  mayExist?(): Promise<boolean>;
}

/** Bodies are JSON; "" is a cached "no such thing". */
const encode = (value: unknown) => (value === undefined ? "" : JSON.stringify(value));
const decode = <T>(body: string): T | undefined => (body === "" ? undefined : (JSON.parse(body) as T));

/**
 * The value for an entry `read` found (read by the caller, possibly with live figures
 * beside it): fresh, stale (served, and rebuilt in the background by one caller), or missing
 * (loaded, by one caller at a time per entry when the guard is on).
 */
export async function resolveEntry<T>(ctx: CacheContext, source: CachedSource<T>, read: EntryRead): Promise<T | undefined> {
  if (read.state === "fresh") return decode<T>(read.body);
  if (read.state === "stale") {
    // Stale entries exist only under rebuildOnce (otherwise soft TTL = hard TTL).
    ctx.inFlight.runInBackground(
      `rebuild:${source.keys.entry}`,
      () => rebuild(ctx, source).catch((err) => log.warn("cache rebuild failed", { entry: source.keys.entry }, err)),
      ctx.waitUntil,
    );
    return decode<T>(read.body);
  }
  if (ctx.guards.bloom && source.mayExist && !(await source.mayExist())) return undefined;
  if (!ctx.guards.rebuildOnce) return loadAndPut(ctx, source, read.nowMs);
  return once(ctx, `load:${source.keys.entry}`, async (): Promise<T | undefined> => {
    const rebuilt = await rebuild(ctx, source);
    if (rebuilt) return rebuilt.value;
    // Another caller holds the lock and is loading it: read its write rather than D1.
    const written = await entryWritten(ctx, source.keys);
    if (written) return decode<T>(written.body);
    // It took longer than a reader should wait: read D1 after all (bounded, and rare).
    return loadAndPut(ctx, source, read.nowMs);
  });
}

/** The entry, once another caller has written it; undefined if it did not within MISSING_WAIT_MS. */
async function entryWritten(ctx: CacheContext, keys: EntryKeys): Promise<EntryRead | undefined> {
  const deadline = Date.now() + MISSING_WAIT_MS;
  for (let pause = POLL_MS.first; Date.now() + pause < deadline; pause = Math.min(pause * 2, POLL_MS.max)) {
    await new Promise((resolve) => setTimeout(resolve, pause));
    const read = await readEntry(ctx.redis, keys);
    if (read.state !== "missing") return read;
  }
  return undefined;
}

/**
 * Runs `work` once per key in this isolate at a time, kept alive by the request that runs it;
 * concurrent callers pick its answer up (src/isolate/shared-work.ts).
 */
function once<R>(ctx: CacheContext, key: string, work: () => Promise<R>): Promise<R> {
  return ctx.inFlight.run(key, work, ctx.waitUntil) as Promise<R>;
}

/**
 * Rebuilds an entry if its lock is free (one attempt, one round trip). Read again once held:
 * the caller that held it before may have rebuilt it already (then D1 is not read).
 * Undefined when the lock is taken: another caller is rebuilding it.
 */
async function rebuild<T>(ctx: CacheContext, source: CachedSource<T>): Promise<{ value: T | undefined } | undefined> {
  const lease = await new Lock(ctx.redis, source.lockName).tryAcquire({ leaseMs: REBUILD_LEASE_MS });
  if (!lease) return undefined;
  try {
    // The lock mints a fencing token, which no rebuild uses: its counter goes when the lease
    // could (else one key per entry ever rebuilt stays forever). Sent in the same tick as the
    // read, it travels in the same auto-pipelined request.
    const [again] = await Promise.all([
      readEntry(ctx.redis, source.keys),
      ctx.redis.pexpire(lockKeys(source.lockName).fence, REBUILD_LEASE_MS),
    ]);
    if (again.state === "fresh") return { value: decode<T>(again.body) };
    return { value: await loadAndPut(ctx, source, again.nowMs) };
  } finally {
    await lease.release().catch((err) => log.warn("cache rebuild lock not released; it lapses", { lock: source.lockName }, err));
  }
}

/**
 * Reads D1 and writes the entry back, versioned by the Redis time `readAt` of the read that
 * found it missing or stale (taken before D1 was read). A write-back that fails or is
 * refused (an edit came meanwhile) does not fail the read: D1's answer is still right now.
 */
async function loadAndPut<T>(ctx: CacheContext, source: CachedSource<T>, readAt: number): Promise<T | undefined> {
  const value = await source.load();
  const { softMs, hardMs } = value === undefined ? source.missTtl : source.ttl;
  const spread = (ms: number) => (ctx.guards.jitter ? jittered(ms, TTL_JITTER) : ms);
  const hard = spread(hardMs);
  const ttl = ctx.guards.rebuildOnce ? { softMs: Math.min(spread(softMs), hard), hardMs: hard } : { softMs: hard, hardMs: hard };
  await putEntry(ctx.redis, source.keys, readAt, encode(value), ttl, { setIfNewer: ctx.guards.setIfNewer }).catch((err) =>
    log.warn("cache write-back failed", { entry: source.keys.entry }, err),
  );
  return value;
}
