/**
 * The oversell lab's strategies, in the order its report lists them. `durable-object` is
 * the Cloudflare-native peer of `atomic`: one SQLite-backed Durable Object per lab sale,
 * one RPC per checkout; `durable-object-merged` is that peer at its best, with atomic's
 * merging and isolate memo. `design-card` is the checkout as a design card usually draws it
 * (a rate-limit call and one EVAL per buyer), for the cost comparison.
 */
export const STRATEGIES = [
  "naive",
  "lock",
  "redlock",
  "optimistic",
  "atomic",
  "durable-object",
  "durable-object-merged",
  "design-card",
] as const;
export type StrategyName = (typeof STRATEGIES)[number];
