// The model's inputs, each with where it comes from: a published limit or list price (read
// 2026-11-23, named in docs/scale.md with its address), a figure `npm run bench` measured, or
// an assumption stated as one. Change a number here and `npm run model` shows what follows.

import { QUEUE_MESSAGE_MAX_ORDERS } from "../../src/shared/limits.ts";

/** Where buyers are, and the round trip from their Cloudflare location to the database's region. */
export interface Region {
  name: string;
  /** Share of the buyers. */
  share: number;
  /** Cloudflare locations in the region that receive the spike. */
  locations: number;
  /** Round trip, location to the database region (ms): assumption, typical inter-region figures. */
  rttMs: number;
}

/** Database (Upstash primary region, and the Durable Object's home) in North America east. */
export const REGIONS: Region[] = [
  { name: "North America east", share: 0.25, locations: 12, rttMs: 8 },
  { name: "North America west", share: 0.15, locations: 8, rttMs: 65 },
  { name: "Europe", share: 0.25, locations: 20, rttMs: 85 },
  { name: "Asia", share: 0.2, locations: 20, rttMs: 190 },
  { name: "South America", share: 0.07, locations: 6, rttMs: 125 },
  { name: "Oceania", share: 0.05, locations: 4, rttMs: 200 },
  { name: "Africa and Middle East", share: 0.03, locations: 5, rttMs: 170 },
];

export const INPUTS = {
  /** Units on sale. Assumption: a large drop; every scenario is a crowd of many buyers per unit. */
  stock: 5_000,
  /** Buyer to its Cloudflare location, round trip (ms), drawn uniformly: Cloudflare's network page says within about 50 ms of 95% of Internet users. */
  clientRttMs: [5, 50] as [number, number],
  /**
   * Server CPU per checkout in an isolate (ms): what `npm run bench` measured for an accepted
   * checkout in production's mix on this project's local runtime (section 2b, "cpu": the
   * Worker's own CPU with its share of settlement, local D1's left out), an upper bound:
   * Miniflare's own routing is in it and this machine's cores are slower than Cloudflare's.
   */
  cpuMsPerCheckout: 1.17,
  /** Server CPU of a refusal answered from the isolate's memo (ms), measured the same way (a warm sold-out refusal). */
  cpuMsPerLocalRefusal: 0.89,
  /**
   * Isolates per location taking the spike: at least this many (a location's traffic is spread
   * over its machines, each with its own isolate), more when the CPU demands it. Assumption.
   */
  minIsolatesPerLocation: 4,
  /** Highest CPU utilisation of an isolate before the platform adds one. Assumption. */
  isolateUtilisation: 0.7,
  /** Buyers per merged script call at most. */
  maxBatch: QUEUE_MESSAGE_MAX_ORDERS,
  /** A waiter notices its answer within this (merged-calls poll, backing off to 8 ms). */
  pickupMs: 8,
  /** How long an isolate trusts a sold-out answer before asking again (isolate memo). */
  soldOutMemoMs: 1_000,
  /** Script time in Redis per call and per buyer in it (ms): `npm run bench` section "scale", Redis CPU per accepted. Upper bound. */
  scriptMsPerCall: 0.05,
  scriptMsPerBuyer: 0.02,
  /** Upstash Redis pay-as-you-go: max commands per second per database (Upstash pricing and billing page). */
  upstashCommandsPerSec: 10_000,
  /** Cloudflare Queues: messages per second per queue (Queues limits page). */
  queueMessagesPerSec: 5_000,
  /** D1 runs one query at a time; ~1 ms per write gives ~1,000 statements/s (D1 limits page); one insert per order. */
  d1OrdersPerSec: 1_000,
  /** D1 rows written per settled order: the row, its primary key and three indexes, the sale's sold counter (migrations/). */
  d1RowsPerOrder: 6,
  /**
   * Upstash commands besides the merged calls: settlement's outbox clear, one ZREM and one
   * HDEL per sale naming all its settled orders (src/settlement/outbox.ts), so at most two per
   * queue message (a message is one call's orders, all of one sale).
   */
  settlementCommandsPerMessage: 2,
  /**
   * An object's time per RPC (ms), whatever it carries, and per buyer checked and written in
   * it. A Durable Object serves about 1,000 simple requests/s (its soft limit, Durable Objects
   * FAQ): 1 ms for an RPC of one buyer, which is the unmerged peer's figure. The split is an
   * assumption: four SQLite statements on cached pages in one transaction (the buyer looked
   * up, the sale read and updated, the buyer inserted) take tens of microseconds, not a
   * millisecond, so most of that 1 ms is the request itself. An RPC of n buyers then takes
   * 0.95 + 0.05 n ms: 952 RPCs/s at n = 1, 167 RPCs/s (16,700 buyers/s) at n = 100.
   */
  objectMsPerRpc: 0.95,
  objectMsPerBuyer: 0.05,
  /** SQLite rows written per accepted checkout in the object (sale row, buyer row and its key). */
  objectRowsPerAccepted: 3,
  /** Durable Object memory billed for duration (GB): 128 MB. */
  objectGb: 0.128,
} as const;

/** List prices in US dollars, beyond each plan's included usage (read 2026-11-23; docs/scale.md has the pages). */
export const PRICES = {
  workersPerMillionRequests: 0.3,
  workersPerMillionCpuMs: 0.02,
  upstashPerMillionCommands: 2.0, // $0.20 per 100K
  queuesPerMillionOperations: 0.4, // write + read + delete = 3 operations per message of up to 64 KB
  queueOperationsPerMessage: 3,
  d1PerMillionRowsWritten: 1.0,
  objectsPerMillionRequests: 0.15,
  objectsPerMillionGbSeconds: 12.5,
  objectsPerMillionRowsWritten: 1.0,
} as const;
