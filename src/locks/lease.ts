import type { LockLostReason } from "./errors";

/** What each lock kind does to renew or release one of its leases. */
export interface LeaseOps {
  renew(): Promise<boolean>;
  release(): Promise<boolean>;
}

/**
 * One hold of a lock. `expiresAt` is a local-clock estimate of the lease's end: it counts
 * the lease from when the request that took or renewed it was sent (less a drift allowance
 * for quorum locks), so it does not run late; a lock handed over by a release message
 * counts from the message's arrival, one one-way trip after the hand-over, which the
 * watchdog's renewal at a third of the lease leaves ample room for.
 */
export class Lease {
  #lost: LockLostReason | undefined;

  constructor(
    /** The lock's name, for messages. */
    readonly lock: string,
    /**
     * Strictly increasing across the acquisitions of one lock (minted by the acquire
     * script beside the lock); hand it to fencedBatch. Undefined where no single counter
     * can order the holders (quorum and multi locks; see docs/locks.md).
     */
    readonly fence: number | undefined,
    readonly leaseMs: number,
    public expiresAt: number,
    private readonly ops: LeaseOps,
    private readonly driftMs = 0,
    /**
     * Who holds it, for fencedBatch: random per acquisition (a reentrant lock's owner id).
     * D1 keeps it beside the token, so the same token from another holder (a counter that
     * went back with its Redis) is refused.
     */
    readonly holder: string = crypto.randomUUID(),
  ) {}

  /** Why the lock was lost while held (set by `using` the moment it knows); undefined while it is not. */
  get lost(): LockLostReason | undefined {
    return this.#lost;
  }

  /** Marks the lease lost; the first reason stays. */
  markLost(reason: LockLostReason): void {
    this.#lost ??= reason;
  }

  /** Extends the lease by leaseMs from now while it is still held; false when it is not. */
  async renew(): Promise<boolean> {
    const sentAt = Date.now();
    const held = await this.ops.renew();
    if (held) this.expiresAt = Math.max(this.expiresAt, sentAt + this.leaseMs - this.driftMs);
    return held;
  }

  /** Releases the lock if still held; false when it had expired or belongs to another holder. */
  release(): Promise<boolean> {
    return this.ops.release();
  }
}
