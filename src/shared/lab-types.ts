// The lab's strategies and the body of GET /lab/sales/:id/report. Import-free, so the load
// runner and the benchmarks use them too.

export const STRATEGIES = ["naive", "lock", "optimistic", "atomic"] as const;
export type StrategyName = (typeof STRATEGIES)[number];

export interface LabSaleReport {
  id: string;
  strategies: Record<StrategyName, LabCopyReport>;
}

/** One strategy's copy of a lab sale. */
export interface LabCopyReport {
  stock: number;
  remaining: number;
  /** Checkouts the strategy accepted (202s), each counted once. */
  accepted: number;
  /** Distinct users among them. */
  buyers: number;
  /** Units sold that did not exist: accepted - stock. */
  oversold: number;
  /**
   * Acceptances beyond one per user: accepted - buyers. Read it once the crowd is done:
   * optimistic checkouts in flight hold a claim in `buyers`.
   */
  duplicates: number;
  /** Units nobody bought: stock - accepted. */
  unsold: number;
}
