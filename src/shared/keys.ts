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
