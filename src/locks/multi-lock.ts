import type { Redis } from "@upstash/redis";
import { LockTimeoutError } from "./errors";
import { type Held, type HoldOptions, holdWhile } from "./hold";
import { Lease } from "./lease";
import { Lock, type LockOptions } from "./lock";

/**
 * Several locks on one database, all or none (Redisson's MultiLock). They are taken one
 * by one in sorted name order, each waiting on its own release messages, so two callers
 * wanting overlapping sets never hold one each and wait for the other's. One round trip
 * per lock, since each lock keeps its own hash tag; any lock not taken in time releases
 * the ones already held.
 */
export class MultiLock {
  readonly names: string[];

  constructor(
    private readonly redis: Redis,
    names: string[],
  ) {
    this.names = [...new Set(names)].sort();
  }

  /** A lease over every lock; each one's fencing token is in `parts`. Undefined when one stayed taken. */
  async tryAcquire(options: LockOptions): Promise<MultiLease | undefined> {
    const deadline = Date.now() + (options.waitMs ?? 0);
    const parts: Lease[] = [];
    for (const name of this.names) {
      const lease = await new Lock(this.redis, name).tryAcquire({ ...options, waitMs: Math.max(0, deadline - Date.now()) });
      if (!lease) {
        await Promise.all(parts.map((part) => part.release().catch(() => false)));
        return undefined;
      }
      parts.push(lease);
    }
    return new MultiLease(this.names.join(","), parts, options.leaseMs);
  }

  async using<T>(fn: Held<T>, options: LockOptions & HoldOptions): Promise<T> {
    const lease = await this.tryAcquire(options);
    if (!lease) throw new LockTimeoutError(this.names.join(","), `${options.waitMs ?? 0} ms`);
    return holdWhile(lease, fn, options);
  }
}

/** Held while every part is held: it renews and releases them all. */
export class MultiLease extends Lease {
  constructor(
    lock: string,
    readonly parts: Lease[],
    leaseMs: number,
  ) {
    super(lock, undefined, leaseMs, Math.min(...parts.map((part) => part.expiresAt)), {
      renew: async () => (await Promise.all(parts.map((part) => part.renew()))).every(Boolean),
      release: async () => (await Promise.all(parts.map((part) => part.release()))).every(Boolean),
    });
  }
}
