// The published prices a drop is priced at, and one Upstash database's limits: list prices
// beyond each plan's included usage, read 2026-11-28 (docs/benchmarks.md names the pages).

export const PRICES_READ_ON = "2026-11-28";

export const PRICES = {
  /** Workers paid: $0.30 per million requests, $0.02 per million CPU-ms. */
  workersPerMillionRequests: 0.3,
  workersPerMillionCpuMs: 0.02,
  /** Upstash pay-as-you-go: $0.20 per 100,000 commands. */
  upstashPerMillionCommands: 2.0,
  /** Queues: $0.40 per million operations; a message is written, read and deleted. */
  queuesPerMillionOperations: 0.4,
  queueOperationsPerMessage: 3,
  /** D1: $0.001 per million rows read, $1.00 per million rows written. */
  d1PerMillionRowsRead: 0.001,
  d1PerMillionRowsWritten: 1.0,
} as const;

/** Upstash pay-as-you-go, per database: 10,000 commands a second, 100 MB a record. */
export const UPSTASH_LIMITS = { commandsPerSec: 10_000, recordBytes: 100_000_000 } as const;

/**
 * A hosted waiting room is sold by plan, not by use: Cloudflare's comes with its Business and
 * Enterprise plans; Queue-it's is put at about $10,000 a year by one open-source waiting
 * room's own comparison.
 */
export const HOSTED_WAITING_ROOM =
  "sold by plan: Cloudflare Waiting Room with a Business or Enterprise plan; Queue-it about $10,000 a year (one open-source waiting room's comparison)";
