// The read path's guards, one failure mode at a time: each test shows the failure with the
// guard off, then the guard holding, by counting what reaches D1 (counting-db.ts) on the
// real local D1 and a real Redis behind the project's gateway.
import { env } from "cloudflare:test";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { ApiClient } from "../../dev/lib/api-client";
import { eventually } from "../../dev/lib/wait";
import { SharedWork } from "../../src/isolate/shared-work";
import { bloomMayHave } from "../../src/redis/bloom";
import { putEntry, readEntry } from "../../src/redis/cache-entries";
import { redisFor } from "../../src/redis/client";
import { keepBloomFilled } from "../../src/sales/bloom-upkeep";
import { CARD_TTL, type CatalogDeps, IsolateReads, readCatalogPage, readSalePage } from "../../src/sales/catalog";
import { LookupBudgetSpent, UNFILTERED_LOOKUPS } from "../../src/sales/lookup-budget";
import { ALL_GUARDS, CACHE_LOAD_SHARING, type CacheGuards, resolveEntry } from "../../src/sales/read-through";
import { findSale } from "../../src/sales/repository";
import { catalogKeys, saleCardKeys } from "../../src/shared/keys";
import { heldDb } from "./held-db";
import { api, createSale, fetchWithVars, redis } from "./helpers";

const workerRedis = redisFor(env);

/** The background work reads leave behind (ctx.waitUntil), to await or count. */
function background() {
  const work: Promise<unknown>[] = [];
  let settled = 0;
  return {
    waitUntil: (p: Promise<unknown>) => {
      work.push(p.finally(() => settled++));
    },
    get started() {
      return work.length;
    },
    get settled() {
      return settled;
    },
    all: () => Promise.allSettled(work),
  };
}

/** A reader in an isolate of its own (unless one is given), with some guards off. */
function reader(
  db: D1Database,
  off: Partial<Record<keyof CacheGuards, false>> = {},
  bg = background(),
  isolate = new IsolateReads(),
  redis = workerRedis,
): CatalogDeps {
  return { db, redis, waitUntil: bg.waitUntil, guards: { ...ALL_GUARDS, ...off }, isolate };
}

/** `work` over `items`, `width` at a time. */
async function inBatches<T, R>(items: T[], width: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += width) out.push(...(await Promise.all(items.slice(i, i + width).map(work))));
  return out;
}

/** Ids no sale can have: sale ids are below 2^48 (bulk-loaded ones below 2^49), these are between 2^49 and 2^53. */
const absentIds = (n: number) =>
  Array.from({ length: n }, () => String(2 ** 49 + Math.floor(Math.random() * (2 ** 53 - 2 ** 50))));

/** Sales written straight into D1 (ended ones, so they hold no order-id slot anyone needs), as a bulk load would. */
async function insertEndedSales(n: number): Promise<string[]> {
  const base = 2 ** 48 + Math.floor(Math.random() * (2 ** 48 - n));
  const ids = Array.from({ length: n }, (_, i) => String(base + i));
  const now = Date.now();
  await env.DB.batch(
    ids.map((id) =>
      env.DB.prepare(
        `INSERT INTO sales (id, name, stock, starts_at, ends_at, id_slot, admit_rate, admit_burst, created_at)
         VALUES (?, 'bulk', 5, ?, ?, 0, 10, 10, ?)`,
      ).bind(Number(id), now - 7_200_000, now - 3_600_000, now),
    ),
  );
  return ids;
}

async function bloomFilled(redis = workerRedis): Promise<void> {
  await eventually("the Bloom filter to be filled", async () => (await keepBloomFilled(env.DB, redis)).ready, 30_000);
}

describe("penetration: lookups of ids that were never created", () => {
  beforeAll(() => bloomFilled());

  it("without the Bloom filter, every new id reaches D1", async () => {
    const d1 = heldDb(env.DB);
    const pages = await inBatches(absentIds(1_000), 100, (id) => readSalePage(reader(d1.db, { bloom: false }), id));
    expect(pages.filter((p) => p !== undefined)).toEqual([]);
    expect(d1.queries).toBe(1_000);
  });

  it("with it, 10,000 random ids reach D1 for at most 1% of them, and a repeated id never again", async () => {
    const d1 = heldDb(env.DB);
    const ids = absentIds(10_000);
    const pages = await inBatches(ids, 250, (id) => readSalePage(reader(d1.db), id));
    expect(pages.filter((p) => p !== undefined)).toEqual([]);
    expect(d1.queries).toBeLessThanOrEqual(100);
    // The few the filter let through are cached as misses: asked again, none reaches D1.
    const before = d1.queries;
    await inBatches(ids, 250, (id) => readSalePage(reader(d1.db), id));
    expect(d1.queries).toBe(before);
  });

  it("finds every sale that exists, created through the API or loaded in bulk", async () => {
    const sale = await createSale({ name: "findable" });
    const [bulk] = await insertEndedSales(1);
    expect(await bloomMayHave(workerRedis, [sale.id, bulk as string])).toEqual([true, false]);
    await keepBloomFilled(env.DB, workerRedis); // the cron takes recently created sales in again
    expect(await bloomMayHave(workerRedis, [sale.id, bulk as string])).toEqual([true, true]);
    expect((await readSalePage(reader(env.DB), sale.id))?.sale.name).toBe("findable");
  });

  it("a lost filter is not trusted: lookups go to D1 until the cron has filled it again", async () => {
    // On a Redis of its own: refilled from this file's D1 alone, the suite's shared filter
    // would deny the sales other files hold in theirs.
    const scratch = redisFor({ ...env, UPSTASH_REDIS_REST_URL: env.TEST_SCRATCH_REDIS_URL });
    const scratchApi = new ApiClient({
      fetch: (path, init) => fetchWithVars({ UPSTASH_REDIS_REST_URL: env.TEST_SCRATCH_REDIS_URL }, path, init),
      adminToken: env.ADMIN_TOKEN,
      jwtSecret: env.JWT_SECRET,
    });
    await bloomFilled(scratch);
    const sale = await scratchApi.createSale({ name: "outlives its filter" });
    await scratch.del(catalogKeys.bloom);
    expect(await bloomMayHave(scratch, ["1"])).toBeUndefined();
    const d1 = heldDb(env.DB);
    const read = (id: string) => readSalePage(reader(d1.db, {}, background(), new IsolateReads(), scratch), id);
    expect(await read(absentIds(1)[0] as string)).toBeUndefined();
    expect(d1.queries).toBe(1);
    // A sale created meanwhile does not make the rebuilt bits trusted before the fill is done.
    await scratchApi.createSale({ name: "created while the filter is lost" });
    expect(await bloomMayHave(scratch, ["1"])).toBeUndefined();
    await bloomFilled(scratch);
    expect(await bloomMayHave(scratch, [sale.id])).toEqual([true]);
    expect(await read(absentIds(1)[0] as string)).toBeUndefined();
    expect(d1.queries).toBe(1); // only the lookup made while the filter was lost
  });
});

describe("penetration while the filter is lost: D1 is read within a budget until it is refilled", () => {
  // On the scratch Redis (see the test above), with its filter deleted.
  const scratch = redisFor({ ...env, UPSTASH_REDIS_REST_URL: env.TEST_SCRATCH_REDIS_URL });
  const second = () => Math.floor(Date.now() / 1000);

  /** Reads every id, each in `isolateFor(i)`; counts what reached D1 and what the budget refused. */
  async function crawl(ids: string[], isolateFor: (i: number) => IsolateReads) {
    await scratch.del(catalogKeys.bloom);
    expect(await bloomMayHave(scratch, ["1"])).toBeUndefined();
    const d1 = heldDb(env.DB);
    const from = second();
    const outcomes = await inBatches(
      ids.map((id, i) => ({ id, isolate: isolateFor(i) })),
      250,
      ({ id, isolate }) =>
        readSalePage(reader(d1.db, {}, background(), isolate, scratch), id).then(
          (page) => (page === undefined ? "not found" : "found"),
          (err: unknown) => (err instanceof LookupBudgetSpent ? err.budget : "failed"),
        ),
    );
    // Fixed windows of a second: every second the crawl touched may have spent one window's budget.
    const seconds = second() - from + 1;
    const count = (what: string) => outcomes.filter((o) => o === what).length;
    return { d1: d1.queries, seconds, notFound: count("not found"), refused: count("total") + count("isolate"), count };
  }

  it("10,000 random ids, each from an isolate of its own, reach D1 within the deployment's budget, not once each", async () => {
    const crawled = await crawl(absentIds(10_000), () => new IsolateReads());
    expect(crawled.count("found") + crawled.count("failed")).toBe(0);
    expect(crawled.notFound + crawled.refused).toBe(10_000);
    expect(crawled.d1).toBe(crawled.notFound); // only the lookups the budget let through read D1
    expect(crawled.d1).toBeLessThanOrEqual(UNFILTERED_LOOKUPS.totalPerSecond * crawled.seconds);
    expect(crawled.d1).toBeLessThan(10_000);
  });

  it("one isolate's crawl stops at its own budget, without asking Redis for the deployment's", async () => {
    const isolate = new IsolateReads();
    const crawled = await crawl(absentIds(2_000), () => isolate);
    const { rate, burst } = UNFILTERED_LOOKUPS.perIsolate;
    expect(crawled.d1).toBe(crawled.notFound);
    expect(crawled.d1).toBeLessThanOrEqual(burst + rate * crawled.seconds);
    expect(crawled.count("isolate")).toBeGreaterThan(0);
  });

  it("over budget, the sale page answers 503 with Retry-After, and the refusals make a log line, not one each", async () => {
    await scratch.del(catalogKeys.bloom);
    const lines: string[] = [];
    const spy = vi.spyOn(console, "warn").mockImplementation((line: unknown) => {
      lines.push(String(line));
    });
    try {
      const answers = await Promise.all(
        absentIds(200).map((id) => fetchWithVars({ UPSTASH_REDIS_REST_URL: env.TEST_SCRATCH_REDIS_URL }, `/api/sales/${id}`)),
      );
      const statuses = answers.map((res) => res.status);
      expect(statuses.filter((status) => status !== 404 && status !== 503)).toEqual([]);
      const refused = answers.filter((res) => res.status === 503);
      expect(refused.length).toBeGreaterThan(0);
      for (const res of refused) expect(res.headers.get("Retry-After")).toBe("1");
      expect(await (refused[0] as Response).json()).toEqual({ error: { code: "UNAVAILABLE", message: expect.any(String) } });
      const logged = lines.map((line) => JSON.parse(line) as { message: string });
      expect(logged.filter((l) => l.message === "sale read failed")).toEqual([]);
      expect(logged.filter((l) => l.message.startsWith("lookups of unknown sale ids over budget")).length).toBeLessThan(
        refused.length,
      );
    } finally {
      spy.mockRestore();
    }
  });

  it("a sale that exists is still found within the budget, and the refilled filter needs none", async () => {
    await scratch.del(catalogKeys.bloom);
    const d1 = heldDb(env.DB);
    const sale = await createSale({ name: "found while the filter is lost" });
    // The crawls above may have spent this second's budget: the page is refused until the next window.
    const found = () =>
      readSalePage(reader(d1.db, {}, background(), new IsolateReads(), scratch), sale.id).catch((err: unknown) => {
        if (err instanceof LookupBudgetSpent) return undefined;
        throw err;
      });
    await eventually("the sale to be found", async () => (await found())?.sale.name === "found while the filter is lost", 10_000);
    await bloomFilled(scratch);
    const spent = new IsolateReads();
    const before = d1.queries;
    for (const id of absentIds(100))
      expect(await readSalePage(reader(d1.db, {}, background(), spent, scratch), id)).toBeUndefined();
    expect(d1.queries - before).toBeLessThanOrEqual(5); // the filter's ~1% false positives only
  });
});

describe("avalanche: entries written together", () => {
  /** How far apart the hard expiries of these sales' cached cards are, as a share of the TTL. */
  async function expirySpread(ids: string[]): Promise<number> {
    const ttls = (await Promise.all(ids.map((id) => redis.pttl(saleCardKeys(id).entry)))).map(Number);
    expect(Math.min(...ttls)).toBeGreaterThan(0);
    return (Math.max(...ttls) - Math.min(...ttls)) / CARD_TTL.hardMs;
  }

  it("1,000 cards loaded at once (a restart, a bulk load) expire over at least 20% of their TTL; without jitter, together", async () => {
    await bloomFilled();
    const together = await insertEndedSales(1_000);
    const apart = await insertEndedSales(1_000);
    await keepBloomFilled(env.DB, workerRedis);
    await inBatches(together, 250, (id) => readSalePage(reader(env.DB, { jitter: false }), id));
    await inBatches(apart, 250, (id) => readSalePage(reader(env.DB), id));
    expect(await expirySpread(together)).toBeLessThan(0.02);
    expect(await expirySpread(apart)).toBeGreaterThanOrEqual(0.2);
  });
});

describe("breakdown: a hot entry going stale under load", () => {
  /** `sale` as the cached card, written now, stale in a millisecond. */
  async function staleCard(sale: unknown & { id: string }): Promise<void> {
    const { nowMs } = await readEntry(workerRedis, saleCardKeys(sale.id));
    const ttl = { softMs: 1, hardMs: CARD_TTL.hardMs };
    expect(await putEntry(workerRedis, saleCardKeys(sale.id), nowMs, JSON.stringify(sale), ttl)).toBe(true);
    await new Promise((r) => setTimeout(r, 5));
  }

  it("without the guard, 500 readers of an expired entry all wait on D1, each reading it", async () => {
    const sale = await createSale({ name: "hot" });
    await redis.del(saleCardKeys(sale.id).entry);
    const d1 = heldDb(env.DB);
    d1.hold();
    let answered = 0;
    const readers = Array.from({ length: 500 }, () =>
      readSalePage(reader(d1.db, { rebuildOnce: false }), sale.id).then((page) => {
        answered++;
        return page;
      }),
    );
    await eventually("every reader to reach D1", async () => d1.queries === 500);
    expect(answered).toBe(0);
    d1.open();
    expect((await Promise.all(readers)).every((p) => p?.sale.name === "hot")).toBe(true);
  });

  it("with it, 500 readers of a stale entry are all served the stale copy at once, and D1 is read exactly once", async () => {
    const sale = await createSale({ name: "hot" });
    const before = await findSale(env.DB, sale.id);
    await api.editSale(sale.id, { description: "after" }); // the record moves on; the rebuild must show it...
    await staleCard(before as NonNullable<typeof before>); // ...while the cache holds the card from before, stale now
    const d1 = heldDb(env.DB);
    d1.hold();
    const bg = background();
    // 500 isolates: one reader each, so only the entry's lock in Redis keeps them from all rebuilding.
    const pages = await Promise.all(Array.from({ length: 500 }, () => readSalePage(reader(d1.db, {}, bg), sale.id)));
    expect(pages.every((p) => p?.sale.description === "")).toBe(true); // answered while D1 is held: nobody waited on it
    // Every rebuild attempt but the lock holder's gives up; the holder waits on D1. (Each
    // reader's page load is background work of its own too, and settled with its answer.)
    await eventually(
      "499 rebuild attempts to give up, one to read D1",
      async () => bg.settled === bg.started - 1 && d1.queries > 0,
    );
    expect(d1.queries).toBe(1);
    d1.open();
    await bg.all();
    expect(d1.queries).toBe(1);
    const fresh = await readEntry(workerRedis, saleCardKeys(sale.id));
    expect(fresh.state).toBe("fresh");
    expect(JSON.parse(fresh.body).description).toBe("after");
  });
});

describe("inconsistency: a reader racing an edit", () => {
  /**
   * A reader that finds the card missing and loads the sale from D1, then stalls (a slow
   * isolate) until `resume` before writing the row it read back to the cache.
   */
  async function stalledReader(saleId: string, resume: Promise<void>, off: Partial<Record<keyof CacheGuards, false>> = {}) {
    const keys = saleCardKeys(saleId);
    const read = await readEntry(workerRedis, keys);
    expect(read.state).toBe("missing");
    let loaded!: () => void;
    const hasLoaded = new Promise<void>((resolve) => {
      loaded = resolve;
    });
    const done = resolveEntry(
      {
        redis: workerRedis,
        guards: { ...ALL_GUARDS, rebuildOnce: false, ...off },
        waitUntil: () => {},
        inFlight: new SharedWork(CACHE_LOAD_SHARING),
      },
      {
        keys,
        lockName: `test:${saleId}`,
        ttl: CARD_TTL,
        missTtl: CARD_TTL,
        load: async () => {
          const old = await findSale(env.DB, saleId);
          loaded();
          await resume;
          return old;
        },
      },
      read,
    );
    await hasLoaded;
    return done;
  }

  const served = async (saleId: string) => (await readSalePage(reader(env.DB), saleId))?.sale.name;

  it("without set-if-newer, the old row is written back after the edit and served, until the delayed delete removes it", async () => {
    const sale = await createSale({ name: "old name" });
    await redis.del(saleCardKeys(sale.id).entry);
    let resume!: () => void;
    const stalled = stalledReader(sale.id, new Promise((r) => (resume = r)), { setIfNewer: false });
    const editedAt = Date.now();
    expect((await api.editSale(sale.id, { name: "new name" })).status).toBe(200); // D1, then delete (and a delete in 2 s)
    resume();
    expect((await stalled)?.name).toBe("old name");
    const name = await served(sale.id);
    // Stale, in the cache, after the edit: unless a busy machine took past the delayed delete already.
    if (Date.now() - editedAt < 2_000) expect(name).toBe("old name");
    await eventually("the delayed delete", async () => (await served(sale.id)) === "new name", 15_000);
  });

  it("with it, the old row is refused at once: no stale value is ever served", async () => {
    const sale = await createSale({ name: "old name" });
    await redis.del(saleCardKeys(sale.id).entry);
    let resume!: () => void;
    const stalled = stalledReader(sale.id, new Promise((r) => (resume = r)));
    expect((await api.editSale(sale.id, { name: "new name" })).status).toBe(200);
    resume();
    expect((await stalled)?.name).toBe("old name"); // that reader's own answer predates the edit...
    expect(await served(sale.id)).toBe("new name"); // ...but it never reached the cache
    expect(JSON.parse((await readEntry(workerRedis, saleCardKeys(sale.id))).body).name).toBe("new name");
  });

  it("an older rebuild never overwrites a newer one, whatever order their writes arrive in", async () => {
    const sale = await createSale();
    const keys = saleCardKeys(sale.id);
    const older = (await readEntry(workerRedis, keys)).nowMs;
    await new Promise((r) => setTimeout(r, 5));
    const newer = (await readEntry(workerRedis, keys)).nowMs;
    const ttl = { softMs: 60_000, hardMs: 60_000 };
    expect(await putEntry(workerRedis, keys, newer, '"new"', ttl)).toBe(true);
    expect(await putEntry(workerRedis, keys, older, '"old"', ttl)).toBe(false);
    expect((await readEntry(workerRedis, keys)).body).toBe('"new"');
    // Without the comparison the late one wins.
    expect(await putEntry(workerRedis, keys, older, '"old"', ttl, { setIfNewer: false })).toBe(true);
    expect((await readEntry(workerRedis, keys)).body).toBe('"old"');
  });
});

describe("the catalog", () => {
  it("lists upcoming and live sales by start, a page at a time, without ended or cancelled ones", async () => {
    const now = Date.now();
    const at = (minutes: number) => new Date(now + minutes * 60_000).toISOString();
    // Far ahead, so the suite's other sales (starting about now) come first and these are together.
    const made: Awaited<ReturnType<typeof createSale>>[] = [];
    for (let i = 0; i < 23; i++) {
      made.push(await createSale({ name: `listed ${i}`, startsAt: at(300_000 + i), endsAt: at(300_060 + i) }));
    }
    const cancelled = made[5] as (typeof made)[number];
    expect((await api.setSaleState(cancelled.id, "cancel")).status).toBe(200);
    const listed: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await api.catalog(cursor);
      expect(page.sales.length).toBeLessThanOrEqual(20);
      listed.push(...page.sales.map((s) => s.id));
      expect(page.sales.every((s) => ["upcoming", "live", "sold_out", "paused"].includes(s.status))).toBe(true);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    const ours = listed.filter((id) => made.some((m) => m.id === id));
    expect(ours).toEqual(made.filter((m) => m !== cancelled).map((m) => m.id));
    expect(new Set(listed).size).toBe(listed.length);
  });

  it("shows an edit at once, with live remaining stock; once warm, 1,000 views in fresh isolates cost D1 at most one rebuild", async () => {
    const sale = await createSale({ name: "catalogued", stock: 3 });
    await api.catalog(); // warm
    expect((await api.editSale(sale.id, { name: "renamed", stock: 5 })).status).toBe(200);
    const d1 = heldDb(env.DB);
    const first = await readSalePage(reader(d1.db), sale.id);
    expect(first?.sale.name).toBe("renamed");
    expect(first?.remaining.total).toBe(5);
    await readCatalogPage(reader(d1.db), undefined);
    expect(d1.queries).toBeGreaterThanOrEqual(1); // the evicted card, once (the first page may be warm already)
    const reads = d1.queries;
    await inBatches(Array.from({ length: 1_000 }), 100, () => readSalePage(reader(d1.db), sale.id));
    // The edit's second eviction (two seconds after it) may land among the views: one rebuild then.
    expect(d1.queries - reads).toBeLessThanOrEqual(1);
  });

  it("refuses a cursor it never gave", async () => {
    const res = await api.fetch("/api/sales?cursor=zzzzzzzzzzzz_1");
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("INVALID_CURSOR");
  });
});
