import type { Redis } from "@upstash/redis";
import { backoffDelayMs } from "./backoff";
import { type Ear, type Listening, listen } from "./channels";

/** What one attempt found: the prize, or how long the holder's lease still runs (ms; <= 0 unknown). */
export type Attempt<T> = { acquired: T } | { retryInMs: number };

/**
 * The fallback when no release message comes: jittered exponential backoff until the
 * subscription is confirmed, then a jittered capMs (messages do the waking from then on).
 */
export interface RetryOptions {
  baseMs: number;
  capMs: number;
}

export const DEFAULT_RETRY: RetryOptions = { baseMs: 20, capMs: 500 };

/**
 * What a message on the lock's channel means to one waiter: try again now, nothing (it is
 * for another waiter), or the prize itself (a release handed the lock over to this waiter).
 */
export type Verdict<T> = "retry" | "ignore" | { acquired: T };

export interface WaitOptions<T> {
  redis: Redis;
  ear: Ear;
  /** How long to wait (0, the default: one attempt), the fallback backoff, and whether to listen at all. */
  budget: { waitMs?: number; retry?: RetryOptions; wakeOnRelease?: boolean };
  attempt: () => Promise<Attempt<T>>;
  onMessage: (message: string) => Verdict<T>;
}

/**
 * Tries until `attempt` succeeds or `waitMs` is spent. A waiter listens on the lock's
 * channel (Upstash REST subscribe, one streaming request) only after a first attempt
 * failed, so an uncontended acquire is one round trip; it tries again once the
 * subscription is confirmed (a release may have come before it was listening), whenever a
 * message says so, and otherwise after a jittered backoff capped by the holder's remaining
 * lease and the budget left (once subscribed, the backoff is the cap: it is only a fallback
 * for a lost message, and for fair waiters the heartbeat that keeps their place). A waiter
 * that can join a subscription already open in its process joins before its first
 * attempt, which spares it the second. Undefined when the budget ran out.
 */
export async function acquireWaiting<T>(options: WaitOptions<T>): Promise<T | undefined> {
  const waitMs = options.budget.waitMs ?? 0;
  const listens = waitMs > 0 && options.budget.wakeOnRelease !== false;
  const retry = options.budget.retry ?? DEFAULT_RETRY;
  const deadline = Date.now() + waitMs;
  let handedOver: { acquired: T } | undefined;
  let nudged = false;
  let wake: (() => void) | undefined;
  const nudge = () => {
    nudged = true;
    wake?.();
  };
  const hooks = {
    onMessage: (message: string) => {
      const verdict = options.onMessage(message);
      if (verdict === "ignore") return;
      if (verdict !== "retry") handedOver = verdict;
      nudge();
    },
    onReady: nudge,
  };
  let listening: Listening | undefined = listens ? listen(options.redis, options.ear, hooks, true) : undefined;
  try {
    let found = await options.attempt();
    if ("acquired" in found) return found.acquired;
    if (waitMs <= 0) return undefined;
    if (listening?.ready) nudged = false; // joined a confirmed subscription before the attempt: nothing was missed
    if (listens) listening ??= listen(options.redis, options.ear, hooks);
    for (let retries = 0; ; retries++) {
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      if (!nudged && !handedOver) {
        const leaseLeft = found.retryInMs > 0 ? found.retryInMs : Number.POSITIVE_INFINITY;
        const backoff = backoffDelayMs(listening?.ready ? Number.POSITIVE_INFINITY : retries, retry.baseMs, retry.capMs);
        const delay = Math.min(backoff, leaseLeft, left);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, delay);
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
      }
      nudged = false;
      if (handedOver) return handedOver.acquired;
      if (Date.now() >= deadline) return undefined;
      found = await options.attempt();
      if ("acquired" in found) return found.acquired;
    }
  } finally {
    listening?.close();
  }
}
