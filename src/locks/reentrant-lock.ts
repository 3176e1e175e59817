import type { Redis } from "@upstash/redis";
import { LockTimeoutError } from "./errors";
import { type Held, type HoldOptions, holdWhile } from "./hold";
import { reentrantLockKeys } from "./keys";
import { Lease } from "./lease";
import type { AcquireOptions } from "./lock";
import { LOCK_LUA, num, runLockScript } from "./scripts";
import { acquireWaiting } from "./wait";

export interface ReentrantHold {
  /** The fencing token the owner's hold began with; the same for every re-entry. */
  fence: number;
  /** How many times the owner holds the lock now. */
  holdCount: number;
}

/** What a release did: the owner's holds left (0: the lock is free), or nothing, for a non-owner. */
export type ReentrantRelease = { owner: true; holdsLeft: number } | { owner: false };

/**
 * A reentrant lock (Redisson's RLock): an explicit owner id (a request, a task) may take
 * the lock it already holds. A hash owner -> hold count; each take refreshes the lease,
 * each release takes one hold back, and the key goes at zero. Waiters wake on the release
 * message and race for the lock (not fair).
 */
export class ReentrantLock {
  private readonly keys;

  constructor(
    private readonly redis: Redis,
    readonly name: string,
  ) {
    this.keys = reentrantLockKeys(name);
  }

  async acquire(owner: string, options: AcquireOptions): Promise<ReentrantHold | undefined> {
    const keys = this.keys;
    const redis = this.redis;
    return acquireWaiting({
      redis,
      ear: { channel: keys.channel },
      budget: options,
      attempt: async () => {
        const reply = await runLockScript<unknown[]>(
          redis,
          LOCK_LUA.reentrantAcquire,
          [keys.lock, keys.fence],
          [owner, options.leaseMs],
        );
        if (num(reply[0]) === 1) return { acquired: { fence: num(reply[1]), holdCount: num(reply[2]) } };
        return { retryInMs: num(reply[1]) };
      },
      onMessage: () => "retry",
    });
  }

  /** One release of the owner's holds; a non-owner's release changes nothing and says so. */
  async release(owner: string): Promise<ReentrantRelease> {
    const left = num(await runLockScript(this.redis, LOCK_LUA.reentrantRelease, [this.keys.lock], [owner, this.keys.channel]));
    return left < 0 ? { owner: false } : { owner: true, holdsLeft: left };
  }

  /** Extends the owner's lease; false when it does not hold the lock. */
  async renew(owner: string, leaseMs: number): Promise<boolean> {
    return num(await runLockScript(this.redis, LOCK_LUA.lockRenew, [this.keys.lock], [owner, leaseMs])) === 1;
  }

  /**
   * Takes one hold for `owner`, runs fn with the lease renewed (see holdWhile), then gives
   * that hold back. Nested calls by the same owner re-enter.
   */
  async using<T>(owner: string, fn: Held<T>, options: AcquireOptions & HoldOptions): Promise<T> {
    const sentAt = Date.now();
    const hold = await this.acquire(owner, options);
    if (!hold) throw new LockTimeoutError(this.name, `${options.waitMs ?? 0} ms`);
    const lease = new Lease(
      this.name,
      hold.fence,
      options.leaseMs,
      sentAt + options.leaseMs,
      {
        renew: () => this.renew(owner, options.leaseMs),
        release: async () => (await this.release(owner)).owner,
      },
      0,
      // Nested holds by one owner share its token, so they are one holder to the resource.
      owner,
    );
    return holdWhile(lease, fn, options);
  }
}
