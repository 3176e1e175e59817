// Order ids are 64-bit and minted inside lua/checkout.lua:
//   (milliseconds since ORDER_ID_EPOCH) << 22 | slot << 10 | (index among the sale's ids of that millisecond)
// The slot is unique among sales whose windows overlap (chosen in D1 when the sale is
// created), and ids are only minted inside a sale's window, so two sales never mint the same
// id. Within a sale the millisecond is the sale's own clock: Redis' time, never behind the
// last id's (a Redis clock stepped back keeps counting in that millisecond), and at most
// ID_INDEXES ids a millisecond: a buyer past that is told to retry, so the clock never runs
// ahead of Redis' time.
//
// Why the millisecond: a Redis that comes back behind (restarted from a copy, a failover to
// a replica that missed the last writes) holds the sale's state from before the writes it lost,
// so any counter it keeps starts again below numbers already handed out. Only its clock has
// moved on: a restart or failover takes far longer than a millisecond, so every id it mints
// carries a later millisecond than any it lost, and cannot repeat one. (With whole seconds, a
// Redis back within the second it lost writes in re-minted them.) This holds as long as the
// clock of the Redis that takes over is not behind the lost one's by more than the failover
// took. The sale's order sequence (how many ids it minted, for detecting a Redis gone back)
// is not in the id: lua/checkout.lua reports it with every call.
//
// Ids travel as decimal strings: they exceed 2^53. Outside the system an order goes by its
// public id instead, a keyed permutation of this one (src/shared/public-order-id.ts).
import { ORDER_ID_PATTERN } from "./limits";

/**
 * 2025-12-01T00:00:00Z. A month before the epoch of the earlier layout (seconds since
 * 2026-01-01 << 32 | slot << 20 | sequence): for a switch before mid-2029, every id of this
 * layout is above every id that one minted, so none equals one. 2^41 ms: ids fit in 63 bits
 * until 2095.
 */
export const ORDER_ID_EPOCH_MS = 1_764_547_200_000;
export const ID_SLOTS = 4096;
/** Ids one sale mints per millisecond, at most (a million a second: far above any sale's admission). */
export const ID_INDEXES = 1024;

export interface OrderIdParts {
  /** Unix time of the reservation, milliseconds (the sale's clock: Redis' time). */
  unixMs: number;
  slot: number;
  /** Its place among the sale's ids of that millisecond. */
  index: number;
}

/** An order id a client may send: a public one (2^63 and up) or an internal one from before them. */
export function isOrderId(value: string): boolean {
  return ORDER_ID_PATTERN.test(value) && BigInt(value) < 1n << 64n;
}

export function decodeOrderId(orderId: string): OrderIdParts {
  const id = BigInt(orderId);
  return {
    unixMs: Number(id >> 22n) + ORDER_ID_EPOCH_MS,
    slot: Number((id >> 10n) & BigInt(ID_SLOTS - 1)),
    index: Number(id & BigInt(ID_INDEXES - 1)),
  };
}
