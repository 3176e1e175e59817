/** The lock could not be taken within the wait budget (`within`: "500 ms", "4 attempts"). */
export class LockTimeoutError extends Error {
  constructor(
    readonly lock: string,
    within: string,
  ) {
    super(`lock ${lock} was not acquired within ${within}`);
    this.name = "LockTimeoutError";
  }
}

/**
 * Why a holder stopped holding before it was done:
 * - `taken`: a renewal found the lock gone or someone else's;
 * - `expired`: no renewal was confirmed before the lease ran out (a paused process, a slow
 *   network), so another holder may have it;
 * - `renewal-failed`: a renewal could not reach Redis;
 * - `max-hold`: the hold reached maxHoldMs and renewal stopped.
 */
export type LockLostReason = "taken" | "expired" | "renewal-failed" | "max-hold";

/** The lock was lost while its holder ran: the holder's signal aborted with this. */
export class LockLostError extends Error {
  constructor(
    readonly lock: string,
    readonly reason: LockLostReason,
    options?: { cause?: unknown },
  ) {
    super(`lock ${lock} was lost while held (${reason})`, options);
    this.name = "LockLostError";
  }
}

/**
 * A fenced write was refused: its token is lower than one the resource has seen (`lower`: a
 * later holder has written), or equal to one another holder wrote with (`reused`: the lock's
 * counter went back, as after a Redis failover that lost its last writes).
 */
export class StaleFenceError extends Error {
  constructor(
    readonly resource: string,
    readonly fence: number,
    readonly reason: "lower" | "reused",
    options?: { cause?: unknown },
  ) {
    super(
      reason === "lower"
        ? `fencing token ${fence} for ${resource} is stale: a later holder has written`
        : `fencing token ${fence} for ${resource} was already used by another holder`,
      options,
    );
    this.name = "StaleFenceError";
  }
}
