import type { KeepAlive } from "../isolate/shared-work";
import type { Redis } from "../redis/client";
import type { Refusal } from "../shared/refusal";
import type { LabSaleObject } from "./sale-object";

/**
 * What one lab checkout ended in: an order, or a refusal in the checkout's own vocabulary
 * (BUSY when a strategy gave up under contention). Every copy counts its acceptances
 * exactly in its meta's `seq` field (one atomic increment per acceptance) and its distinct
 * buyers in `buyers`, so the report's oversold and duplicates are facts, whatever the
 * strategy got wrong.
 */
export type LabOutcome = { code: "OK"; orderId: string } | Refusal;

/** Where the copies live, and the request's waitUntil for strategies whose calls other requests share. */
export interface LabBackends {
  redis: Redis;
  /** The durable-object copies' objects, named by the lab sale's id (see mergedObjectName). */
  objects: DurableObjectNamespace<LabSaleObject>;
  keepAlive: KeepAlive;
  /** The independent databases the redlock copy locks on. */
  quorum: () => Redis[];
}

export type Strategy = (backends: LabBackends, labSaleId: string, userId: string) => Promise<LabOutcome>;
