// Every key of a sale carries the same hash tag, so one script can touch them all on a
// Redis Cluster (and on Upstash, which may shard): KEYS[] never cross a slot.

export interface SaleKeys {
  /** Hash: name, stock, remaining, starts, ends, slot, seq, rate, burst. */
  meta: string;
  /** Hash: user id -> order id. */
  buyers: string;
  /** Sorted set: "<orderId>:<userId>" scored by reservation time (ms). */
  outbox: string;
  /** Token bucket of the sale's checkout admission. */
  admission: string;
}

export function saleKeys(saleId: string): SaleKeys {
  const prefix = `fs:{sale:${saleId}}`;
  return {
    meta: `${prefix}:meta`,
    buyers: `${prefix}:buyers`,
    outbox: `${prefix}:outbox`,
    admission: `${prefix}:admission`,
  };
}

export const outboxMember = (orderId: string, userId: string) => `${orderId}:${userId}`;

/** Order ids are digits only, so the first ':' ends them even when user ids contain ':'. */
export function parseOutboxMember(member: string): { orderId: string; userId: string } {
  const colon = member.indexOf(":");
  return { orderId: member.slice(0, colon), userId: member.slice(colon + 1) };
}

/**
 * Checkout outcomes per second for the admin console's time series, one hash per minute
 * (`minute` = epoch seconds / 60, floored) so a reader fetches a few small hashes, never one
 * that grows all sale long. Fields are `<epoch second>:<code>`, code being OK or a refusal
 * code (SOLD_OUT, RATE_LIMITED, ...); values are counts. Written by lua/checkout.lua for
 * what Redis decided and by each isolate for the refusals it answered locally; kept 2 hours.
 */
export const saleStatsKey = (saleId: string, minute: number) => `fs:{sale:${saleId}}:stats:${minute}`;

/** How long a minute of outcome counters is kept. */
export const SALE_STATS_TTL_SECONDS = 7_200;
