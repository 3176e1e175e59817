import type { Redis } from "@upstash/redis";
import { semaphoreKeys } from "./keys";
import { Lease } from "./lease";
import type { AcquireOptions } from "./lock";
import { LOCK_LUA, num, runLockScript } from "./scripts";
import { acquireWaiting } from "./wait";

/** One permit: a lease with an id of its own, released by that id. */
export class Permit extends Lease {
  constructor(
    semaphore: ExpirableSemaphore,
    readonly id: string,
    leaseMs: number,
    expiresAt: number,
    renew: () => Promise<boolean>,
  ) {
    super(semaphore.name, undefined, leaseMs, expiresAt, { renew, release: () => semaphore.release(id) });
  }
}

/**
 * A semaphore with expiring permits (Redisson's RPermitExpirableSemaphore): `permits`
 * permits, each with its own id and lease; a permit whose lease runs out returns by itself.
 * Every user of one semaphore name must pass the same number of permits. Waiters wake on
 * the release message and race for the permit.
 */
export class ExpirableSemaphore {
  private readonly keys;

  constructor(
    private readonly redis: Redis,
    readonly name: string,
    readonly permits: number,
  ) {
    this.keys = semaphoreKeys(name);
  }

  async tryAcquire(options: AcquireOptions): Promise<Permit | undefined> {
    const keys = this.keys;
    const redis = this.redis;
    const id = crypto.randomUUID();
    return acquireWaiting({
      redis,
      ear: { channel: keys.channel },
      budget: options,
      attempt: async () => {
        const sentAt = Date.now();
        const reply = await runLockScript<unknown[]>(
          redis,
          LOCK_LUA.semaphoreAcquire,
          [keys.permits],
          [this.permits, id, options.leaseMs],
        );
        if (num(reply[0]) !== 1) return { retryInMs: num(reply[1]) };
        const renew = async () =>
          num(await runLockScript(redis, LOCK_LUA.lockRenew, [keys.permits], [id, options.leaseMs])) === 1;
        return { acquired: new Permit(this, id, options.leaseMs, sentAt + options.leaseMs, renew) };
      },
      onMessage: () => "retry",
    });
  }

  /** Gives a permit back by id; false when no live permit has it (released, or lapsed). */
  async release(permitId: string): Promise<boolean> {
    return (
      num(await runLockScript(this.redis, LOCK_LUA.semaphoreRelease, [this.keys.permits], [permitId, this.keys.channel])) === 1
    );
  }

  /** Permits free now (lapsed ones count as free). */
  async available(): Promise<number> {
    return num(await runLockScript(this.redis, LOCK_LUA.semaphoreAvailable, [this.keys.permits], [this.permits]));
  }
}
