import { IsolateCache } from "../isolate/isolate-cache";
import { decodeOrderId } from "../shared/order-id";

/**
 * The hot path's rollback detector, at no extra round trip: each sale's order sequence only
 * grows (lua/checkout.lua numbers ids one by one; a rebuild numbers on above every sequence
 * reported), so an isolate that sees a new id not above one it saw minted before knows Redis
 * went back. Ids carry the sequence modulo 2^20 (src/shared/order-id.ts): compared on that
 * circle, a step back is one of more than half of it.
 */
const SEQUENCE_SPAN = 1 << 20;
/** A day: a sale's ids are minted within its window, and an idle entry costs a few bytes. */
const highest = new IsolateCache<number>({ ttlMs: 86_400_000, maxEntries: 10_000 });
/** A loss reported from this isolate lately: its crowd reports it once, not per checkout. */
const reported = new IsolateCache<true>({ ttlMs: 2_000, maxEntries: 1_000 });

const isAfter = (seq: number, than: number) => {
  const step = (seq - than + SEQUENCE_SPAN) % SEQUENCE_SPAN;
  return step !== 0 && step < SEQUENCE_SPAN / 2;
};

/** The highest sequence this isolate saw minted for the sale (0: none). */
export function highestMinted(saleId: string): number {
  return highest.get(saleId) ?? 0;
}

/**
 * Takes in one merged call's minted ids (ascending). True when Redis went back: the call's
 * first id is not above the highest this isolate saw before. The highest seen stays.
 */
export function wentBack(saleId: string, orderIds: string[]): boolean {
  const first = orderIds[0];
  const last = orderIds.at(-1);
  if (first === undefined || last === undefined) return false;
  const before = highest.get(saleId);
  const [firstSeq, lastSeq] = [decodeOrderId(first).sequence, decodeOrderId(last).sequence];
  if (before !== undefined && !isAfter(firstSeq, before)) return true;
  highest.set(saleId, lastSeq);
  return false;
}

/** True once per sale per couple of seconds in this isolate: whether to report its loss now. */
export function firstReport(saleId: string): boolean {
  if (reported.get(saleId)) return false;
  reported.set(saleId, true);
  return true;
}
