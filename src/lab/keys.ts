import { bucketKeys, saleKeys } from "../shared/keys";
import { STRATEGIES, type StrategyName } from "../shared/lab-strategies";

export const isStrategy = (name: string): name is StrategyName => (STRATEGIES as readonly string[]).includes(name);

/**
 * The copies the lab lays out itself in Redis; the atomic copy is a real sale (see
 * atomicSaleId), the durable-object copies live in objects of their own.
 */
export type HandRolledStrategy = Exclude<StrategyName, "atomic" | "durable-object" | "durable-object-merged">;

export interface LabKeys {
  /** Hash: stock, remaining, seq (the copy's exact count of accepted checkouts). */
  meta: string;
  /** Hash of the users who bought (see each strategy for what it stores). */
  buyers: string;
  /** The name of the lock (or quorum lock) the lock strategies take. */
  lockName: string;
}

/** Keys of a hand-rolled copy: the lab's own prefix, one hash tag per copy. */
export function labKeys(strategy: HandRolledStrategy, labSaleId: string): LabKeys {
  const prefix = `lab:{${strategy}:${labSaleId}}`;
  return { meta: `${prefix}:meta`, buyers: `${prefix}:buyers`, lockName: `lab:${strategy}:${labSaleId}` };
}

/**
 * The atomic copy runs the real reservation, so it is laid out as a real sale, under the
 * real sale keys (src/redis/keys.ts). Real sale ids are digits only: this id cannot alias one.
 */
export const atomicSaleId = (labSaleId: string) => `lab:${labSaleId}`;

/** The atomic copy is one bucket: the lab's crowds are far from any record limit. */
export const LAB_SALE_BUCKETS = 1;

/** The atomic copy's keys, for reading its stock and buyers. */
export const atomicKeys = (labSaleId: string) => ({
  ...saleKeys(atomicSaleId(labSaleId)),
  ...bucketKeys(atomicSaleId(labSaleId), 0, LAB_SALE_BUCKETS),
});

/** The durable-object copy's object is named by the lab sale's id; the merged copy's by this. */
export const mergedObjectName = (labSaleId: string) => `${labSaleId}:merged`;

/**
 * The merged object's copy in the isolate memo (atomic's is atomicSaleId): each copy sells
 * on its own, so each has its own sold-out and buyers there.
 */
export const mergedObjectMemoId = (labSaleId: string) => `lab-object:${labSaleId}`;
