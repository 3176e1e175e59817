import type { Redis } from "@upstash/redis";
import { LockTimeoutError } from "./errors";
import { type Held, type HoldOptions, holdWhile } from "./hold";
import { lockKeys } from "./keys";
import { Lease } from "./lease";
import { LOCK_LUA, num, runLockScript } from "./scripts";

export interface QuorumOptions {
  leaseMs: number;
  /** Attempts after the first, each after retryDelayMs plus up to retryJitterMs at random. */
  retryCount?: number;
  /** No attempt starts after this long (default: retryCount alone bounds the wait). */
  waitMs?: number;
  retryDelayMs?: number;
  retryJitterMs?: number;
  /** Clock drift allowed between the nodes, as a share of the lease (plus 2 ms). */
  driftFactor?: number;
  /** A node that has not answered by then counts as a failure (default: a tenth of the lease). */
  nodeTimeoutMs?: number;
}

const DEFAULTS = { retryCount: 3, retryDelayMs: 50, retryJitterMs: 50, driftFactor: 0.01 };

/** The promise's value, or `fallback` when it rejects or takes longer than ms. */
function within<T>(promise: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise.catch(() => fallback),
    new Promise<T>((resolve) => {
      timer = setTimeout(() => resolve(fallback), ms);
    }),
  ]).finally(() => {
    if (timer !== undefined) clearTimeout(timer);
  });
}

/**
 * RedLock: one lock over N independent Redis databases (Upstash URL/token pairs). Held
 * when a majority took it within its validity (lease - time spent acquiring - drift);
 * otherwise released on every node (those where the acquire seemed to fail included: the
 * answer may have been lost, not the write) and retried with jitter. It has no fencing
 * token: each node counts on its own, and no counter orders holders across majorities
 * (docs/locks.md has the critique). Waiters poll; nothing wakes them.
 */
export class QuorumLock {
  private readonly keys;
  readonly quorum: number;

  constructor(
    private readonly nodes: Redis[],
    readonly name: string,
  ) {
    if (nodes.length === 0) throw new Error("a quorum lock needs at least one node");
    this.keys = lockKeys(name);
    this.quorum = Math.floor(nodes.length / 2) + 1;
  }

  private keyList() {
    return [this.keys.lock, this.keys.fence, this.keys.queue, this.keys.places];
  }

  /** How many nodes `op` succeeded on, each given nodeTimeoutMs. */
  private async count(op: (node: Redis) => Promise<boolean>, timeoutMs: number): Promise<number> {
    const outcomes = await Promise.all(this.nodes.map((node) => within(op(node), timeoutMs, false)));
    return outcomes.filter(Boolean).length;
  }

  async tryAcquire(options: QuorumOptions): Promise<Lease | undefined> {
    const settings = { ...DEFAULTS, ...options };
    const timeoutMs = options.nodeTimeoutMs ?? Math.max(1, Math.floor(options.leaseMs / 10));
    const driftMs = Math.floor(options.leaseMs * settings.driftFactor) + 2;
    const giveUpAt = Date.now() + (options.waitMs ?? Number.POSITIVE_INFINITY);
    for (let attempt = 0; attempt <= settings.retryCount; attempt++) {
      if (attempt > 0) {
        await new Promise((resolve) => setTimeout(resolve, settings.retryDelayMs + Math.random() * settings.retryJitterMs));
        if (Date.now() >= giveUpAt) break;
      }
      const token = crypto.randomUUID();
      const release = () =>
        this.count(
          async (node) =>
            num(await runLockScript(node, LOCK_LUA.lockRelease, this.keyList(), [token, this.keys.channel, this.keys.grants])) ===
            1,
          timeoutMs,
        );
      const startedAt = Date.now();
      const taken = await this.count(
        async (node) =>
          num((await runLockScript<unknown[]>(node, LOCK_LUA.lockAcquire, this.keyList(), [token, options.leaseMs, 0, 0]))[0]) ===
          1,
        timeoutMs,
      );
      const validityMs = options.leaseMs - (Date.now() - startedAt) - driftMs;
      if (taken >= this.quorum && validityMs > 0) {
        return new Lease(
          this.name,
          undefined,
          options.leaseMs,
          startedAt + options.leaseMs - driftMs,
          {
            renew: async () =>
              (await this.count(
                async (node) =>
                  num(await runLockScript(node, LOCK_LUA.lockRenew, [this.keys.lock], [token, options.leaseMs])) === 1,
                timeoutMs,
              )) >= this.quorum,
            release: async () => (await release()) >= this.quorum,
          },
          driftMs,
        );
      }
      await release();
    }
    return undefined;
  }

  /** Runs fn holding the quorum lock, renewed on a majority every leaseMs/3 (see holdWhile). */
  async using<T>(fn: Held<T>, options: QuorumOptions & HoldOptions): Promise<T> {
    const lease = await this.tryAcquire(options);
    if (!lease) {
      const attempts = `${(options.retryCount ?? DEFAULTS.retryCount) + 1} attempts`;
      throw new LockTimeoutError(this.name, options.waitMs === undefined ? attempts : `${options.waitMs} ms`);
    }
    return holdWhile(lease, fn, options);
  }
}
