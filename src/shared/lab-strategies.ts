/**
 * The oversell lab's strategies, in the order its report lists them. `durable-object` is
 * the Cloudflare-native peer of `atomic`: one SQLite-backed Durable Object per lab sale.
 */
export const STRATEGIES = ["naive", "lock", "redlock", "optimistic", "atomic", "durable-object"] as const;
export type StrategyName = (typeof STRATEGIES)[number];
