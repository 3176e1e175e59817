// The hot path's rollback detector, at no extra round trip: each sale's order sequence only
// grows (lua/checkout.lua numbers the ids it mints one by one and reports where it stands with
// every call; a rebuild numbers on above every sequence reported), so an isolate whose call
// minted numbers not above one it saw minted before knows Redis went back. The ids themselves
// cannot show it: a Redis gone back still mints them at its later time (src/shared/order-id.ts).
import { IsolateCache } from "../isolate/isolate-cache";

/** A day: a sale's ids are minted within its window, and an idle entry costs a few bytes. */
const highest = new IsolateCache<number>({ ttlMs: 86_400_000, maxEntries: 10_000 });
/** A loss reported from this isolate lately: its crowd reports it once, not per checkout. */
const reported = new IsolateCache<true>({ ttlMs: 2_000, maxEntries: 1_000 });

/** The highest sequence this isolate saw minted for the sale (0: none). */
export function highestMinted(saleId: string): number {
  return highest.get(saleId) ?? 0;
}

/**
 * Takes in the sequence numbers one merged call minted. True when Redis went back: the first
 * is not above the highest this isolate saw before. The highest seen stays.
 */
export function wentBack(saleId: string, minted: { first: number; last: number }): boolean {
  const before = highest.get(saleId);
  if (before !== undefined && minted.first <= before) return true;
  highest.set(saleId, minted.last);
  return false;
}

/** True once per sale per couple of seconds in this isolate: whether to report its loss now. */
export function firstReport(saleId: string): boolean {
  if (reported.get(saleId)) return false;
  reported.set(saleId, true);
  return true;
}
