import type { Redis } from "@upstash/redis";
import { backoffDelayMs } from "./backoff";

/** What one attempt found: the prize, or how long the holder's lease still runs (ms; <= 0 unknown). */
export type Attempt<T> = { acquired: T } | { retryInMs: number };

/** The fallback when no release message comes: jittered exponential backoff. */
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
  channel: string;
  waitMs: number;
  retry: RetryOptions;
  attempt: () => Promise<Attempt<T>>;
  onMessage: (message: string) => Verdict<T>;
}

/**
 * Tries until `attempt` succeeds or `waitMs` is spent. A waiter subscribes to the lock's
 * channel (Upstash REST subscribe, one streaming request) only after a first attempt
 * failed, so an uncontended acquire is one round trip. It tries again when the
 * subscription is confirmed (a release may have come before it was listening), whenever a
 * message says so, and otherwise after a jittered backoff capped by the holder's remaining
 * lease and the budget left. Undefined when the budget ran out.
 */
export async function acquireWaiting<T>(options: WaitOptions<T>): Promise<T | undefined> {
  const deadline = Date.now() + options.waitMs;
  let found = await options.attempt();
  if ("acquired" in found) return found.acquired;
  if (options.waitMs <= 0) return undefined;

  let handedOver: { acquired: T } | undefined;
  let nudged = false;
  let wake: (() => void) | undefined;
  const nudge = () => {
    nudged = true;
    wake?.();
  };
  const subscriber = options.redis.subscribe<string>(options.channel);
  subscriber.on("subscribe", nudge);
  subscriber.on("message", ({ message }) => {
    const verdict = options.onMessage(String(message));
    if (verdict === "ignore") return;
    if (verdict !== "retry") handedOver = verdict;
    nudge();
  });
  // A subscription that fails leaves the backoff to do the waking.
  subscriber.on("error", () => undefined);
  try {
    for (let retry = 0; ; retry++) {
      const left = deadline - Date.now();
      if (left <= 0) return undefined;
      if (!nudged) {
        const leaseLeft = found.retryInMs > 0 ? found.retryInMs : Number.POSITIVE_INFINITY;
        const delay = Math.min(backoffDelayMs(retry, options.retry.baseMs, options.retry.capMs), leaseLeft, left);
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
    void subscriber.unsubscribe();
  }
}
