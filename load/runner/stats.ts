// Figures of one crowd: outcomes, latency percentiles, the latency histogram and
// throughput over time, from the raw samples.
import type { Sample } from "./crowd.ts";

export interface LatencyFigures {
  p50: number;
  p90: number;
  p99: number;
  max: number;
  mean: number;
}

export interface RunStats {
  requests: number;
  durationMs: number;
  reqPerSec: number;
  accepted: number;
  /** Distinct users among the accepted checkouts. */
  acceptedUsers: number;
  /** When the acceptance that took the last unit arrived (ms after start); null when units were left. */
  sellOutMs: number | null;
  /** Buyers turned away (busy, failed: any 5xx or no answer) while units were still left. */
  turnedAwayInStock: number;
  /** Acceptances per second until sell-out (the stock's, however many more were oversold), or over the run when units were left. */
  acceptedPerSec: number;
  /** Responses per outcome code (ACCEPTED, SOLD_OUT, ALREADY_PURCHASED, BUSY, ...). */
  outcomes: Record<string, number>;
  latencyMs: LatencyFigures;
  /** Latency buckets [fromMs, toMs); the last one also holds everything slower. */
  histogram: { fromMs: number; toMs: number; count: number }[];
  /** Responses completed per time bin. */
  timeline: { atMs: number; requests: number; accepted: number }[];
  timelineBinMs: number;
}

const HISTOGRAM_BUCKETS = 40;
const TIMELINE_BINS = 60;

/** Nearest-rank percentile of ascending values. */
/** The q-quantile of ascending `sorted` (nearest rank). */
export function percentile(sorted: ArrayLike<number>, q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
}

export function latencyFigures(latencies: number[]): LatencyFigures {
  const sorted = [...latencies].sort((a, b) => a - b);
  const sum = sorted.reduce((a, b) => a + b, 0);
  return {
    p50: percentile(sorted, 0.5),
    p90: percentile(sorted, 0.9),
    p99: percentile(sorted, 0.99),
    max: sorted.at(-1) ?? 0,
    mean: sorted.length ? sum / sorted.length : 0,
  };
}

function histogram(latencies: number[], p99: number): RunStats["histogram"] {
  // Up to a little past p99, so the tail stays visible without one outlier flattening the rest.
  const width = Math.max(1, Math.ceil((p99 * 1.25) / HISTOGRAM_BUCKETS));
  const buckets = Array.from({ length: HISTOGRAM_BUCKETS }, (_, i) => ({ fromMs: i * width, toMs: (i + 1) * width, count: 0 }));
  for (const ms of latencies) (buckets[Math.min(HISTOGRAM_BUCKETS - 1, Math.floor(ms / width))] as { count: number }).count++;
  return buckets;
}

function timeline(samples: Sample[], durationMs: number): { bins: RunStats["timeline"]; binMs: number } {
  const binMs = Math.max(10, Math.ceil(durationMs / TIMELINE_BINS / 10) * 10);
  const bins = Array.from({ length: Math.max(1, Math.ceil(durationMs / binMs)) }, (_, i) => ({
    atMs: i * binMs,
    requests: 0,
    accepted: 0,
  }));
  for (const s of samples) {
    const bin = bins[Math.min(bins.length - 1, Math.floor((s.startMs + s.latencyMs) / binMs))] as (typeof bins)[number];
    bin.requests++;
    if (s.status === 202) bin.accepted++;
  }
  return { bins, binMs };
}

export function summarize(samples: Sample[], durationMs: number, stock: number): RunStats {
  const outcomes: Record<string, number> = {};
  for (const s of samples) outcomes[s.code] = (outcomes[s.code] ?? 0) + 1;
  const acceptedSamples = samples.filter((s) => s.status === 202);
  const acceptedEnds = acceptedSamples.map((s) => s.startMs + s.latencyMs);
  const accepted = acceptedEnds.length;
  // When the stock-th acceptance came back: a strategy that oversells has sold out by then.
  const sellOutMs = accepted >= stock && stock > 0 ? (acceptedEnds.sort((x, y) => x - y)[stock - 1] as number) : null;
  const turnedAwayInStock = samples.filter(
    (s) => (s.status === 0 || s.status >= 500) && (sellOutMs === null || s.startMs + s.latencyMs < sellOutMs),
  ).length;
  const latencies = samples.map((s) => s.latencyMs);
  const latencyMs = latencyFigures(latencies);
  const { bins, binMs } = timeline(samples, durationMs);
  return {
    requests: samples.length,
    durationMs,
    reqPerSec: (samples.length * 1000) / durationMs,
    accepted,
    acceptedUsers: new Set(acceptedSamples.map((s) => s.userId)).size,
    sellOutMs,
    turnedAwayInStock,
    acceptedPerSec: sellOutMs === null ? (accepted * 1000) / durationMs : (stock * 1000) / sellOutMs,
    outcomes,
    latencyMs,
    histogram: histogram(latencies, latencyMs.p99),
    timeline: bins,
    timelineBinMs: binMs,
  };
}
