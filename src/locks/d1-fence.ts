import { StaleFenceError } from "./errors";

// The other half of fencing: the resource refuses a write whose token is lower than one it
// has seen. The `fences` table (migrations/0003_fences.sql) keeps the highest token per
// resource, and its trigger aborts an update that would lower it; D1 runs a batch as one
// transaction, so that abort takes the holder's own writes in the same batch down with it.

/** The slice of D1's API used here (structural, so Miniflare's D1 from Node fits too). */
export interface FenceDatabase<S> {
  prepare(query: string): { bind(...values: unknown[]): S };
  batch(statements: S[]): Promise<unknown[]>;
}

const RECORD_FENCE = `INSERT INTO fences (resource, token, updated_at) VALUES (?1, ?2, ?3)
ON CONFLICT (resource) DO UPDATE SET token = excluded.token, updated_at = excluded.updated_at`;

/** The trigger's message (0003_fences.sql), as D1 reports it inside its error. */
const STALE_MESSAGE = "stale fencing token";

/**
 * Runs `statements` in one D1 batch behind a check of `fence` against the highest token
 * `resource` has seen: an equal or higher token is recorded and the statements commit; a
 * lower one aborts the whole batch and throws StaleFenceError. Returns the statements'
 * results.
 */
export async function fencedBatch<S>(db: FenceDatabase<S>, resource: string, fence: number, statements: S[]): Promise<unknown[]> {
  try {
    const [, ...results] = await db.batch([db.prepare(RECORD_FENCE).bind(resource, fence, Date.now()), ...statements]);
    return results;
  } catch (error) {
    if (String((error as Error)?.message ?? error).includes(STALE_MESSAGE)) {
      throw new StaleFenceError(resource, fence, { cause: error });
    }
    throw error;
  }
}
