// The lab's response bodies, as schemas (see api-types.ts).
import * as z from "zod/mini";
import { STRATEGIES } from "./lab-strategies";
import "./zod-english";

/** One strategy's copy of a lab sale. */
export const LabCopyReport = z.object({
  stock: z.int(),
  remaining: z.int(),
  /** Checkouts the strategy accepted (202s), each counted once. */
  accepted: z.int(),
  /** Distinct users among them. */
  buyers: z.int(),
  /** Units sold that did not exist: accepted - stock. */
  oversold: z.int(),
  /**
   * Acceptances beyond one per user: accepted - buyers. Read it once the crowd is done:
   * optimistic checkouts in flight hold a claim in `buyers`.
   */
  duplicates: z.int(),
  /** Units nobody bought: stock - accepted. */
  unsold: z.int(),
  /**
   * The durable-object copies only: checkout RPCs their object served (since it last started;
   * merged, one RPC carries a batch). Attempts refused in the isolate never reach it.
   */
  rpcs: z.optional(z.int()),
});
export type LabCopyReport = z.infer<typeof LabCopyReport>;

export const LabSaleReport = z.object({
  id: z.string(),
  strategies: z.record(z.enum(STRATEGIES), LabCopyReport),
});
export type LabSaleReport = z.infer<typeof LabSaleReport>;

/** POST /lab/read-path: what the page views cost D1 (their Redis round trips are counted outside, at the gateway). */
export const ReadPathFigures = z.object({
  views: z.int(),
  isolates: z.int(),
  /** Queries that reached D1, the background rebuilds' included. */
  d1Reads: z.int(),
  /** Views answered with no sale (absent ids). */
  notFound: z.int(),
  elapsedMs: z.number(),
});
export type ReadPathFigures = z.infer<typeof ReadPathFigures>;

/** POST /lab/sales, 201. */
export const LabSaleCreated = z.object({ id: z.string(), stock: z.int(), strategies: z.array(z.enum(STRATEGIES)) });
export type LabSaleCreated = z.infer<typeof LabSaleCreated>;
