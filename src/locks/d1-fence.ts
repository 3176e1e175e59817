import { StaleFenceError } from "./errors";
import type { Lease } from "./lease";

// The other half of fencing: the resource refuses a write whose token is lower than one it
// has seen, or equal to one another holder wrote with. The `fences` table
// (migrations/0003_fences.sql, 0011_fence_holders.sql) keeps the highest token per resource
// and the holder that wrote with it; its triggers abort an update that would lower the token
// or reuse it for another holder. D1 runs a batch as one transaction, so that abort takes the
// holder's own writes in the same batch down with it. Why the holder and not an epoch:
// docs/locks.md, "Fences that survive a failover".

/** The slice of D1's API used here (structural, so Miniflare's D1 from Node fits too). */
export interface FenceDatabase<S> {
  prepare(query: string): { bind(...values: unknown[]): S };
  batch(statements: S[]): Promise<unknown[]>;
}

/** What a fenced write needs of a lease: its token and who holds it. */
export type FencedLease = Pick<Lease, "fence" | "holder">;

const RECORD_FENCE = `INSERT INTO fences (resource, token, holder, updated_at) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (resource) DO UPDATE SET token = excluded.token, holder = excluded.holder, updated_at = excluded.updated_at`;

/** The triggers' messages, as D1 reports them inside its error. */
const REFUSALS = { lower: "stale fencing token", reused: "fencing token reused by another holder" } as const;

/**
 * Runs `statements` in one D1 batch behind a check of the lease's fence against what
 * `resource` has seen: a higher token, or the same token from the same holder, is recorded
 * and the statements commit; a lower token, or the same token from another holder, aborts
 * the whole batch and throws StaleFenceError. Returns the statements' results.
 */
export async function fencedBatch<S>(
  db: FenceDatabase<S>,
  resource: string,
  lease: FencedLease,
  statements: S[],
): Promise<unknown[]> {
  const { fence, holder } = lease;
  if (fence === undefined) throw new TypeError("fencedBatch: this lease has no fencing token (quorum and multi locks)");
  try {
    const [, ...results] = await db.batch([db.prepare(RECORD_FENCE).bind(resource, fence, holder, Date.now()), ...statements]);
    return results;
  } catch (error) {
    const message = String((error as Error)?.message ?? error);
    for (const reason of ["lower", "reused"] as const) {
      if (message.includes(REFUSALS[reason])) throw new StaleFenceError(resource, fence, reason, { cause: error });
    }
    throw error;
  }
}
