// The read path's lab: page views of a real sale or of the catalog (or of ids that never
// existed), with some of the cache's guards off, counting what reaches D1. `npm run bench`
// runs it per scenario and counts the Redis round trips at the gateway.
import { putEntry, readEntry } from "../redis/cache-entries";
import { newRedisClient, redisFor } from "../redis/client";
import {
  CARD_TTL,
  type CatalogDeps,
  catalogPageKeys,
  evictSale,
  IsolateReads,
  readCatalogPage,
  readSalePage,
} from "../sales/catalog";
import { ALL_GUARDS, type CacheGuards } from "../sales/read-through";
import { saleCardKeys } from "../shared/keys";
import type { ReadPathFigures } from "../shared/lab-types";
import type { ReadPathExperimentBody } from "../shared/requests";
import { countingDb } from "./counting-db";

/** Views in flight at once, at most. */
const WAVE = 250;

export async function readPathExperiment(env: Env, input: ReadPathExperimentBody): Promise<ReadPathFigures> {
  const db = env.DB;
  const redis = redisFor(env);
  const guards: CacheGuards = { ...ALL_GUARDS };
  for (const guard of input.off) guards[guard] = false;
  const saleId = input.saleId ?? "";
  const entry = input.page === "sale" ? saleCardKeys(saleId) : catalogPageKeys(undefined);
  const view = (deps: CatalogDeps, id: string) =>
    input.page === "sale" ? readSalePage(deps, id) : readCatalogPage(deps, undefined);

  // Set the cache up, uncounted, with every guard on (as the Worker would have left it).
  const setup: CatalogDeps = { db, redis, waitUntil: () => {}, isolate: new IsolateReads() };
  if (input.scenario === "cold") await evictSale(redis, saleId);
  if (input.scenario === "warm" || input.scenario === "stale") await view(setup, saleId);
  if (input.scenario === "stale") {
    if (guards.rebuildOnce) {
      const { nowMs, body } = await readEntry(redis, entry);
      await putEntry(redis, entry, nowMs, body, { softMs: 1, hardMs: CARD_TTL.hardMs });
      await new Promise((r) => setTimeout(r, 2));
    } else {
      await redis.del(entry.entry); // without logical expiry, an entry that expires is gone
    }
  }

  const d1 = countingDb(db);
  const background: Promise<unknown>[] = [];
  // Each isolate stood for has its memory and its Redis client (whose auto-pipelining
  // batches only its own commands), as a real one has.
  const isolates = Array.from({ length: input.isolates ?? input.views }, () => ({
    memory: new IsolateReads(),
    redis: newRedisClient(env),
  }));
  const ids = Array.from({ length: input.views }, () =>
    // Sale ids are below 2^48: these never existed.
    input.scenario === "absent" ? String(2 ** 49 + Math.floor(Math.random() * 2 ** 50)) : saleId,
  );
  let notFound = 0;
  const startedAt = Date.now();
  for (let first = 0; first < input.views; first += WAVE) {
    await Promise.all(
      ids.slice(first, first + WAVE).map(async (id, i) => {
        const isolate = isolates[(first + i) % isolates.length] as (typeof isolates)[number];
        const deps: CatalogDeps = {
          db: d1.db,
          redis: isolate.redis,
          guards,
          waitUntil: (work) => background.push(work),
          isolate: isolate.memory,
        };
        if ((await view(deps, id)) === undefined) notFound++;
      }),
    );
  }
  await Promise.allSettled(background);
  return { views: input.views, isolates: isolates.length, d1Reads: d1.queries, notFound, elapsedMs: Date.now() - startedAt };
}
