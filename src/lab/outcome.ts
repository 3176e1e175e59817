import type { KeepAlive } from "../checkout/merged-calls";
import type { Redis } from "../redis/client";

/**
 * What one lab checkout ended in. Every copy counts its acceptances exactly in its meta's
 * `seq` field (one atomic increment per acceptance) and its distinct buyers in `buyers`, so
 * the report's oversold and duplicates are facts, whatever the strategy got wrong.
 */
export type LabOutcome =
  | { outcome: "OK"; orderId: string }
  | { outcome: "SOLD_OUT" | "ALREADY_PURCHASED" | "SALE_NOT_FOUND" }
  /** Gave up under contention (lock not taken, CAS retries spent): the buyer was turned away. */
  | { outcome: "BUSY" };

/** `keepAlive` is the request's waitUntil, for strategies whose calls other requests share. */
export type Strategy = (redis: Redis, labSaleId: string, userId: string, keepAlive: KeepAlive) => Promise<LabOutcome>;
