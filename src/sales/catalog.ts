// The storefront's reads: a sale's page and the catalog's pages. Sale records come from D1
// through Redis (src/sales/read-through.ts: cache-aside with every guard) and, in front of
// Redis, this isolate's memory for a moment; remaining stock is never cached in Redis: it is
// read live beside the entry, in the same call.
import { IsolateCache } from "../isolate/isolate-cache";
import { SharedWork } from "../isolate/shared-work";
import { bloomMayHave } from "../redis/bloom";
import { type EntryKeys, evictEntries, readEntry, type Ttl } from "../redis/cache-entries";
import { hashEntries, hashRecord, type Redis } from "../redis/client";
import { catalogKeys, saleCardKeys, saleKeys } from "../shared/keys";
import { CATALOG_PAGE_SIZE } from "../shared/limits";
import { findSaleArchive } from "./archives";
import { UnfilteredLookupBudget } from "./lookup-budget";
import {
  ALL_GUARDS,
  CACHE_LOAD_SHARING,
  type CacheContext,
  type CachedSource,
  type CacheGuards,
  resolveEntry,
} from "./read-through";
import { type CatalogCursor, catalogSales, findSale } from "./repository";
import { type Remaining, remainingFromMeta, type Sale, saleStatus, totalOnly } from "./sale";

/** A sale's record: fresh a minute, served stale up to ten while it is rebuilt. Edits evict it at once. */
export const CARD_TTL: Ttl = { softMs: 60_000, hardMs: 600_000 };
/** "No such sale", for ids the Bloom filter cannot rule out. */
export const MISS_TTL: Ttl = { softMs: 30_000, hardMs: 30_000 };
/** A catalog page: sales start and end by the clock, so pages are rebuilt often. */
export const PAGE_TTL: Ttl = { softMs: 10_000, hardMs: 120_000 };
/** An eviction's floor outlives every entry under it, jitter included. */
export const FLOOR_TTL_MS = 2 * CARD_TTL.hardMs;

/** A page poll per isolate reads Redis at most this often. */
const SALE_PAGE_TTL_MS = 500;
const CATALOG_PAGE_TTL_MS = 1_000;

export interface SalePage {
  sale: Sale;
  remaining: Remaining;
}

export interface CatalogSlice {
  sales: SalePage[];
  /** Where the next page starts; undefined on the last page. */
  next: CatalogCursor | undefined;
}

/** What one isolate keeps for reads: the pages it served a moment ago, and its cache loads in flight. */
export class IsolateReads {
  readonly salePages = new IsolateCache<SalePage | null>({ ttlMs: SALE_PAGE_TTL_MS, maxEntries: 1_000, maxBytes: 4 << 20 });
  readonly catalogPages = new IsolateCache<CatalogSlice>({ ttlMs: CATALOG_PAGE_TTL_MS, maxEntries: 100, maxBytes: 4 << 20 });
  readonly inFlight = new SharedWork<unknown>(CACHE_LOAD_SHARING);
  /** D1 lookups it may make for ids a lost Bloom filter cannot rule out (src/sales/lookup-budget.ts). */
  readonly unfilteredLookups = new UnfilteredLookupBudget();

  /** A sale changed: this isolate forgets what it showed of it (others within their TTL). */
  forget(saleId: string): void {
    this.salePages.delete(saleId);
    this.catalogPages.clear();
  }
}

/** This isolate's. */
export const isolateReads = new IsolateReads();

export interface CatalogDeps {
  db: D1Database;
  redis: Redis;
  waitUntil(work: Promise<unknown>): void;
  /** All on unless a test or the bench turns one off. */
  guards?: CacheGuards;
  /** This isolate's unless a test stands for many isolates. */
  isolate?: IsolateReads;
}

const contextOf = (deps: CatalogDeps, isolate: IsolateReads): CacheContext => ({
  redis: deps.redis,
  guards: deps.guards ?? ALL_GUARDS,
  waitUntil: deps.waitUntil,
  inFlight: isolate.inFlight,
});

function saleCard(deps: CatalogDeps, isolate: IsolateReads, saleId: string): CachedSource<Sale> {
  return {
    keys: saleCardKeys(saleId),
    lockName: `card:sale:${saleId}`,
    ttl: CARD_TTL,
    missTtl: MISS_TTL,
    load: () => findSale(deps.db, saleId),
    mayExist: async () => {
      const maybe = await bloomMayHave(deps.redis, [saleId]);
      if (maybe) return maybe[0] as boolean;
      // Not filled yet (a new database, a lost filter): it cannot rule anything out, so D1
      // is asked, within a budget (a crawl of random ids would otherwise read D1 for each).
      await isolate.unfilteredLookups.spend(deps.redis);
      return true;
    },
  };
}

/** A sale and its remaining stock; undefined when there is no such sale. */
export async function readSalePage(deps: CatalogDeps, saleId: string): Promise<SalePage | undefined> {
  const isolate = deps.isolate ?? isolateReads;
  const page = await isolate.salePages.getOrLoad(
    saleId,
    async () => {
      const card = saleCard(deps, isolate, saleId);
      const read = await readEntry(deps.redis, card.keys, saleKeys(saleId).meta);
      const sale = await resolveEntry(contextOf(deps, isolate), card, read);
      if (!sale) return null;
      const live = remainingFromMeta(read.live);
      if (live) return { sale, remaining: live };
      // Not in Redis: archived after it ended, with the figures Redis had then kept in D1.
      const archive = sale.archivedAt === null ? undefined : await findSaleArchive(deps.db, saleId);
      return { sale, remaining: { total: archive?.remaining ?? 0, byVariant: archive?.remainingByVariant ?? {} } };
    },
    deps.waitUntil,
  );
  return page ?? undefined;
}

/** Where the catalog's page after `cursor` (undefined: the first page) is cached. */
export function catalogPageKeys(cursor: CatalogCursor | undefined): EntryKeys {
  return { entry: catalogKeys.page(cursor ? encodeCursor(cursor) : "first"), floor: catalogKeys.floor };
}

/** The catalog's page after `cursor`: sales not ended nor cancelled, by start. */
export async function readCatalogPage(deps: CatalogDeps, cursor: CatalogCursor | undefined): Promise<CatalogSlice> {
  const isolate = deps.isolate ?? isolateReads;
  const at = cursor ? encodeCursor(cursor) : "first";
  return isolate.catalogPages.getOrLoad(
    at,
    async () => {
      const keys = catalogPageKeys(cursor);
      const source: CachedSource<{ sales: Sale[]; next?: CatalogCursor }> = {
        keys,
        lockName: `catalog:page:${at}`,
        ttl: PAGE_TTL,
        missTtl: PAGE_TTL,
        load: async () => {
          const sales = await catalogSales(deps.db, Date.now(), cursor, CATALOG_PAGE_SIZE);
          const last = sales[CATALOG_PAGE_SIZE - 1];
          const next = sales.length > CATALOG_PAGE_SIZE && last ? { startsAt: last.startsAt, id: last.id } : undefined;
          return { sales: sales.slice(0, CATALOG_PAGE_SIZE), next };
        },
      };
      const page = (await resolveEntry(contextOf(deps, isolate), source, await readEntry(deps.redis, keys))) ?? { sales: [] };
      // Issued together: one auto-pipelined request for every sale's remaining stock.
      const metas = await Promise.all(page.sales.map((s) => hashEntries(deps.redis, saleKeys(s.id).meta)));
      const now = Date.now();
      const sales = page.sales
        .map((sale, i) => ({ sale, remaining: remainingFromMeta(hashRecord(metas[i] ?? [])) ?? totalOnly(0) }))
        // A page may be seconds old: a sale that ended or was cancelled since is not shown.
        .filter(({ sale, remaining }) => !["ended", "cancelled"].includes(saleStatus(sale, remaining.total, now)));
      return { sales, next: page.next };
    },
    deps.waitUntil,
  );
}

/**
 * A sale changed in D1: its cached record and every cached catalog page are evicted, and
 * whatever was read before now can no longer be written back (the floors). An archived
 * sale's record is only deleted: the clean-up removed its keys, and no floor brings one back.
 */
export async function evictSale(redis: Redis, saleId: string, { archived = false } = {}): Promise<void> {
  const card = saleCardKeys(saleId);
  await Promise.all([
    archived ? redis.unlink(card.entry) : evictEntries(redis, card.floor, [card.entry], FLOOR_TTL_MS),
    evictEntries(redis, catalogKeys.floor, [], FLOOR_TTL_MS),
  ]);
}

/** Cursors are opaque to clients: the last sale's start and id, base 36. */
export function encodeCursor(cursor: CatalogCursor): string {
  return `${cursor.startsAt.toString(36)}_${Number(cursor.id).toString(36)}`;
}

export function decodeCursor(text: string): CatalogCursor | undefined {
  const match = /^([0-9a-z]{1,11})_([0-9a-z]{1,11})$/.exec(text);
  if (!match) return undefined;
  const startsAt = Number.parseInt(match[1] as string, 36);
  const id = Number.parseInt(match[2] as string, 36);
  return Number.isSafeInteger(startsAt) && Number.isSafeInteger(id) && id > 0 ? { startsAt, id: String(id) } : undefined;
}
