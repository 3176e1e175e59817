import type { KeepAlive } from "../checkout/merged-calls";
import type { Redis } from "../redis/client";
import type { Refusal } from "../shared/refusal";

/**
 * What one lab checkout ended in: an order, or a refusal in the checkout's own vocabulary
 * (BUSY when a strategy gave up under contention). Every copy counts its acceptances
 * exactly in its meta's `seq` field (one atomic increment per acceptance) and its distinct
 * buyers in `buyers`, so the report's oversold and duplicates are facts, whatever the
 * strategy got wrong.
 */
export type LabOutcome = { code: "OK"; orderId: string } | Refusal;

/**
 * `keepAlive` is the request's waitUntil, for strategies whose calls other requests share;
 * `quorum` gives the independent databases the redlock strategy locks on.
 */
export type Strategy = (
  redis: Redis,
  labSaleId: string,
  userId: string,
  keepAlive: KeepAlive,
  quorum: () => Redis[],
) => Promise<LabOutcome>;
