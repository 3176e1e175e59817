// Every key of a sale carries the same hash tag, so one script can touch them all on a
// Redis Cluster (and on Upstash, which may shard): KEYS[] never cross a slot.

export interface SaleKeys {
  /** Hash: name, stock, remaining, starts, ends, slot, seq, rate, burst, limit, state, version. */
  meta: string;
  /** Hash: user id -> "<units held>:<latest order id>". */
  buyers: string;
  /** Sorted set: order ids not settled in D1 yet, scored by when they were last sent (ms). */
  outbox: string;
  /** Hash: order id -> "<quantity>:<user id>", for the orders in the outbox. */
  pending: string;
  /** Set: order ids whose units went back on sale (each comes back once). */
  returned: string;
  /** Token bucket of the sale's checkout admission. */
  admission: string;
  /** Hash: "<user id>\n<Idempotency-Key>" -> "<order id>:<quantity>", for checkouts that sent a key. */
  checkoutKeys: string;
  /** The waiting room (lua/queue-join.lua, lua/queue-progress.lua, lua/checkout.lua): see queueKeys. */
  queue: QueueKeys;
}

/** A sale's waiting room in Redis; the sale's meta hash holds its settings (qmode, qopens, qrate, qttl). */
export interface QueueKeys {
  /** Hash: admitted (every place up to it is admitted), used and expired (passes), at (ms of the last progress). */
  counters: string;
  /** Hash: user id -> place, or "pre" for a random sale's pre-queue joiner (placed by the draw). */
  places: string;
  /** Sorted set, all scores 0: "<draw key hex>:<user id>" of a random sale's pre-queue; the lexical order is the draw. */
  pre: string;
  /** List: user ids in arrival order (a fifo sale's every joiner, a random sale's joiners after the start). */
  line: string;
  /** Hash: user id -> "<place>:<pass expiry ms>", or "<place>:used" once the pass bought. */
  passes: string;
  /** Sorted set: user ids of admitted passes not used yet, scored by their expiry (ms). */
  live: string;
}

export function queueKeys(saleId: string): QueueKeys {
  const prefix = `fs:{sale:${saleId}}:queue`;
  return {
    counters: prefix,
    places: `${prefix}:places`,
    pre: `${prefix}:pre`,
    line: `${prefix}:line`,
    passes: `${prefix}:passes`,
    live: `${prefix}:live`,
  };
}

export function saleKeys(saleId: string): SaleKeys {
  const prefix = `fs:{sale:${saleId}}`;
  return {
    meta: `${prefix}:meta`,
    buyers: `${prefix}:buyers`,
    outbox: `${prefix}:outbox`,
    pending: `${prefix}:pending`,
    returned: `${prefix}:returned`,
    admission: `${prefix}:admission`,
    checkoutKeys: `${prefix}:keys`,
    queue: queueKeys(saleId),
  };
}

/** A sale's cached card (what GET /api/sales/:saleId shows of D1's record) and its eviction floor (lua/cache-read.lua). */
export function saleCardKeys(saleId: string): { entry: string; floor: string } {
  const prefix = `fs:{sale:${saleId}}:card`;
  return { entry: prefix, floor: `${prefix}:floor` };
}

/**
 * The catalog's keys, under one hash tag: the Bloom filter of every sale id, its ready
 * marker (lua/bloom.lua) and fill progress; cached pages of GET /api/sales, one per cursor, and the floor that
 * evicts them all at once when any sale changes.
 */
export const catalogKeys = {
  bloom: "fs:{catalog}:bloom",
  bloomReady: "fs:{catalog}:bloom:ready",
  /** The last sale id a fill of the filter from D1 has reached (a fill spans cron runs). */
  bloomFill: "fs:{catalog}:bloom:fill",
  floor: "fs:{catalog}:floor",
  page: (cursor: string) => `fs:{catalog}:page:${cursor}`,
} as const;

/** A pending order's record, "<quantity>:<user id>": the first ':' ends the quantity, whatever the user id holds. */
export function parsePendingRecord(record: string): { quantity: number; userId: string } {
  const colon = record.indexOf(":");
  return { quantity: Number(record.slice(0, colon)), userId: record.slice(colon + 1) };
}

/**
 * Checkout outcomes per second for the admin console's time series, one hash per minute
 * (`minute` = epoch seconds / 60, floored) so a reader fetches a few small hashes, never one
 * that grows all sale long. Fields are `<epoch second>:<code>`, code being OK or a refusal
 * code (SOLD_OUT, RATE_LIMITED, ...); values are counts. Written by lua/checkout.lua for
 * what Redis decided and by each isolate for the refusals it answered locally; kept 2 hours.
 */
export const saleStatsKey = (saleId: string, minute: number) => `fs:{sale:${saleId}}:stats:${minute}`;

/** lua/checkout.lua's KEYS, in its header's order, counting outcomes into `minute`'s counters. */
export function checkoutScriptKeys(saleId: string, minute: number): string[] {
  const keys = saleKeys(saleId);
  return [
    keys.meta,
    keys.buyers,
    keys.outbox,
    keys.pending,
    keys.admission,
    saleStatsKey(saleId, minute),
    keys.checkoutKeys,
    keys.queue.counters,
    keys.queue.passes,
    keys.queue.live,
  ];
}

/** lua/queue-join.lua's KEYS, in its header's order. */
export function queueJoinKeys(saleId: string): string[] {
  const { meta, queue } = saleKeys(saleId);
  return [meta, queue.places, queue.pre, queue.line];
}

/** lua/queue-progress.lua's KEYS, in its header's order. */
export function queueProgressKeys(saleId: string): string[] {
  const { meta, queue } = saleKeys(saleId);
  return [meta, queue.counters, queue.pre, queue.line, queue.passes, queue.live];
}

/**
 * Sorted set: the user ids seen from one client address in a sale, scored by first arrival
 * (src/admission/accounts-per-address.ts); expires with the sale.
 */
export const addressUsersKey = (saleId: string, ip: string) => `fs:{sale:${saleId}}:address:${ip}`;

/** How long a minute of outcome counters is kept. */
export const SALE_STATS_TTL_SECONDS = 7_200;
