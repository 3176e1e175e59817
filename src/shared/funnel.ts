// The funnel of a drop, as Workers Analytics Engine keeps it: one data point per step, sale and
// invocation, counted where the step happens (docs/operating-a-drop.md, "The funnel"). The
// Worker writes them (src/analytics/funnel.ts) and reads them back with the SQL below, over the
// SQL API in production and from the local stand-in (dev/analytics/) on the local stack.

/** The dataset, as wrangler.toml binds it (FUNNEL) and the SQL names it. */
export const FUNNEL_DATASET = "flash_sale_funnel";

/**
 * The steps, in the order a buyer meets them: joined the waiting room, turned away quietly
 * (a deny rule or a human check failed, answered as a person would be), admitted from the
 * line, reserved (the 202), settled in D1, paid, expired unpaid, cancelled, units returned to
 * the sale, failed (dead-lettered).
 */
export const FUNNEL_STEPS = [
  "joined",
  "turned_away",
  "admitted",
  "reserved",
  "settled",
  "paid",
  "expired",
  "cancelled",
  "returned",
  "failed",
] as const;
export type FunnelStep = (typeof FUNNEL_STEPS)[number];

/**
 * One data point: index1 the sale (Analytics Engine samples by it), blob1 the step, double1
 * how many (buyers or orders), double2 their units (0 where the step has none). The
 * timestamp is Analytics Engine's own, so a point counts its step in the second it was written.
 */
export interface FunnelDataPoint {
  indexes: [string];
  blobs: [FunnelStep];
  doubles: [number, number];
}

export function funnelDataPoint(saleId: string, step: FunnelStep, count: number, units = 0): FunnelDataPoint {
  return { indexes: [saleId], blobs: [step], doubles: [count, units] };
}

/** How far back the console's funnel of one sale looks, and per how many seconds it counts. */
export const FUNNEL_SALE_WINDOW_SECONDS = 900;
/** How far back the funnel across sales looks. */
export const FUNNEL_SALES_WINDOW_SECONDS = 7 * 86_400;

// Both queries are in the part of SQL Analytics Engine and SQLite (the stand-in) share, with
// the stand-in defining toUnixTimestamp and toDateTime on its epoch-second timestamps.
// _sample_interval weighs each point by how many it stands for, should Analytics Engine sample.

/** One sale's funnel per second since `fromSec` (epoch s). `saleId` is digits (SALE_ID_PATTERN). */
export const saleFunnelSql = (saleId: string, fromSec: number) =>
  `SELECT toUnixTimestamp(timestamp) AS at, blob1 AS step, SUM(_sample_interval * double1) AS count
FROM ${FUNNEL_DATASET}
WHERE index1 = '${saleId}' AND timestamp >= toDateTime(${Math.floor(fromSec)})
GROUP BY at, step
ORDER BY at`;

/** Every sale's funnel since `fromSec` (epoch s), step by step. */
export const salesFunnelSql = (fromSec: number) =>
  `SELECT index1 AS sale, blob1 AS step, SUM(_sample_interval * double1) AS count
FROM ${FUNNEL_DATASET}
WHERE timestamp >= toDateTime(${Math.floor(fromSec)})
GROUP BY sale, step
ORDER BY sale`;
