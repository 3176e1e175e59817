import { LockTimeoutError, QuorumLock, type QuorumOptions } from "../../locks";
import { labKeys } from "../keys";
import type { Strategy } from "../strategy";
import { readCheckWrite } from "./naive";

/**
 * The naive read-check-write under RedLock: a quorum lock over independent databases
 * (LOCK_QUORUM_NODES), taken on a majority of them. Nothing wakes its waiters: they retry
 * with jitter, and each attempt is a round trip to every node.
 */
const REDLOCK: QuorumOptions = {
  leaseMs: 5_000,
  // 3 s of retries, like the lock strategy's wait, then the buyer is turned away; a node
  // slower than 500 ms counts as a lost vote.
  waitMs: 3_000,
  retryCount: Number.POSITIVE_INFINITY,
  retryDelayMs: 50,
  retryJitterMs: 100,
  nodeTimeoutMs: 500,
};

export const redlockCheckout: Strategy = async ({ redis, quorum }, labSaleId, userId) => {
  const keys = labKeys("redlock", labSaleId);
  try {
    return await new QuorumLock(quorum(), keys.lockName).using(() => readCheckWrite(redis, keys, userId), REDLOCK);
  } catch (err) {
    if (err instanceof LockTimeoutError) return { code: "BUSY" };
    throw err;
  }
};
