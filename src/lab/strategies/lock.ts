import { LockBusyError, type LockOptions, withLock } from "../../locks/redis-lock";
import { labKeys } from "../keys";
import type { Strategy } from "../strategy";
import { readCheckWrite } from "./naive";

/**
 * The naive read-check-write, made exclusive by one lock per copy. Correct while every
 * holder finishes within the TTL, and serial: one checkout at a time, each holding the
 * lock for three round trips (read, write, release) while the others back off.
 */
const LOCK: LockOptions = {
  // Far above the critical section's two round trips, even on a loaded laptop.
  ttlMs: 5_000,
  // About 3 s of backoff in all before the buyer is turned away.
  attempts: 16,
  retryBaseMs: 10,
  retryCapMs: 250,
};

export const lockCheckout: Strategy = async ({ redis }, labSaleId, userId) => {
  const keys = labKeys("lock", labSaleId);
  try {
    return await withLock(redis, keys.lock, LOCK, () => readCheckWrite(redis, keys, userId));
  } catch (err) {
    if (err instanceof LockBusyError) return { code: "BUSY" };
    throw err;
  }
};
