/** The oversell lab's strategies, in the order its report lists them. */
export const STRATEGIES = ["naive", "lock", "redlock", "optimistic", "atomic"] as const;
export type StrategyName = (typeof STRATEGIES)[number];
