import { Lock, type LockOptions, LockTimeoutError } from "../../locks";
import { labKeys } from "../keys";
import type { Strategy } from "../strategy";
import { readCheckWrite } from "./naive";

/**
 * The naive read-check-write, made exclusive by one lock per copy (src/locks/: SET NX PX
 * with an owner token and a fencing token, compare-and-delete release). Correct while every
 * holder finishes within its renewed lease, and serial: one checkout at a time, each
 * holding the lock for its read and its write.
 * The lab's crowd puts hundreds of waiting requests in one isolate at once. There, waking
 * on the release message (a stream per request) and fair hand-over sold less than plain
 * polling (docs/locks.md, "Inside a Worker"), so these waiters poll and race.
 */
const LOCK: LockOptions = {
  // Far above the critical section's two round trips, even on a loaded laptop.
  leaseMs: 5_000,
  // Then the buyer is turned away.
  waitMs: 3_000,
  fair: false,
  wakeOnRelease: false,
  retry: { baseMs: 10, capMs: 250 },
};

export const lockCheckout: Strategy = async ({ redis }, labSaleId, userId) => {
  const keys = labKeys("lock", labSaleId);
  try {
    return await new Lock(redis, keys.lockName).using(() => readCheckWrite(redis, keys, userId), LOCK);
  } catch (err) {
    if (err instanceof LockTimeoutError) return { code: "BUSY" };
    throw err;
  }
};
