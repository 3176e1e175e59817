import type { Redis } from "@upstash/redis";
import { LockTimeoutError } from "./errors";
import { type Held, type HoldOptions, holdWhile } from "./hold";
import { lockKeys } from "./keys";
import { Lease } from "./lease";
import { LOCK_LUA, num, runLockScript } from "./scripts";
import { acquireWaiting, DEFAULT_RETRY, type RetryOptions, type Verdict } from "./wait";

export interface AcquireOptions {
  /** How long the lock outlives a holder that stops renewing it (crash, pause, lost network). */
  leaseMs: number;
  /** How long to wait for the lock; 0 (the default) is a single attempt. */
  waitMs?: number;
  /** The fallback backoff when no release message wakes a waiter. */
  retry?: RetryOptions;
  /**
   * Listen for the release message (the default). Off, a waiter only polls on the backoff:
   * better for hundreds of waiters in one Worker isolate, where each waiting request holds
   * a stream of its own (docs/locks.md, "Inside a Worker").
   */
  wakeOnRelease?: boolean;
}

export interface LockOptions extends AcquireOptions {
  /**
   * Fair (the default): waiters are served in arrival order and a release hands the lock
   * straight to the first of them. Unfair: every release wakes every waiter and whoever
   * asks first wins, often the holder that just released.
   */
  fair?: boolean;
}

/** A lock name inside a PSUBSCRIBE pattern: its glob characters matched literally. */
const literally = (text: string) => text.replace(/[*?[\]\\]/g, "\\$&");

/** How many backoff caps a fair waiter's place outlives its last attempt. */
const PLACE_IN_BACKOFF_CAPS = 4;

/**
 * A mutual-exclusion lock on one Redis: SET NX PX with a random owner token and a fencing
 * token, one round trip to acquire and one to release (lua/lock-acquire.lua,
 * lua/lock-release.lua). Waiters wake on the release message.
 */
export class Lock {
  private readonly keys;

  constructor(
    private readonly redis: Redis,
    readonly name: string,
  ) {
    this.keys = lockKeys(name);
  }

  /** Takes the lock, waiting up to waitMs; undefined when it stayed taken. */
  async tryAcquire(options: LockOptions): Promise<Lease | undefined> {
    const keys = this.keys;
    const redis = this.redis;
    const token = crypto.randomUUID();
    const waitMs = options.waitMs ?? 0;
    // A single attempt never queues: its place would be handed the lock after it left.
    const fair = (options.fair ?? true) && waitMs > 0;
    const retry = options.retry ?? DEFAULT_RETRY;
    const keyList = [keys.lock, keys.fence, keys.queue, keys.places];
    // Releases the lock, or leaves the queue (handing the lock on if it was just handed here).
    const release = () => runLockScript(redis, LOCK_LUA.lockRelease, keyList, [token, keys.channel, keys.grants]);
    const lease = (fence: number, leaseMs: number, startedAt: number) =>
      new Lease(this.name, fence, options.leaseMs, startedAt + leaseMs, {
        renew: async () => num(await runLockScript(redis, LOCK_LUA.lockRenew, [keys.lock], [token, options.leaseMs])) === 1,
        release: async () => num(await release()) === 1,
      });

    const won = await acquireWaiting({
      redis,
      // A fair waiter hears only its own hand-over; an unfair one, every release.
      ear: fair ? { channel: keys.grants + token, sharedPattern: `${literally(keys.grants)}*` } : { channel: keys.channel },
      budget: { waitMs, retry, wakeOnRelease: options.wakeOnRelease },
      attempt: async () => {
        const sentAt = Date.now();
        const reply = await runLockScript<unknown[]>(redis, LOCK_LUA.lockAcquire, keyList, [
          token,
          options.leaseMs,
          fair ? 1 : 0,
          retry.capMs * PLACE_IN_BACKOFF_CAPS,
        ]);
        if (num(reply[0]) === 1) return { acquired: lease(num(reply[1]), num(reply[2]), sentAt) };
        return { retryInMs: num(reply[1]) };
      },
      onMessage: (message): Verdict<Lease> => {
        if (!fair) return "retry";
        const [fence, leaseMs] = JSON.parse(message) as [number, number];
        return { acquired: lease(fence, leaseMs, Date.now()) };
      },
    });
    if (!won && fair) {
      await release().catch(() => undefined);
    }
    return won;
  }

  /**
   * Runs fn holding the lock, renewed every leaseMs/3 (see holdWhile). Throws
   * LockTimeoutError when the lock was not acquired within waitMs, LockLostError when it
   * was lost while fn ran.
   */
  async using<T>(fn: Held<T>, options: LockOptions & HoldOptions): Promise<T> {
    const lease = await this.tryAcquire(options);
    if (!lease) throw new LockTimeoutError(this.name, `${options.waitMs ?? 0} ms`);
    return holdWhile(lease, fn, options);
  }
}
