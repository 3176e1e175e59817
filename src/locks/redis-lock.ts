import type { Redis } from "@upstash/redis";
import releaseSource from "../../lua/lock-release.lua";
import { backoffDelayMs, sleep } from "./backoff";
import { runLockScript } from "./scripts";

/**
 * A single-Redis mutual-exclusion lock: SET NX PX with an owner token and a Lua
 * compare-and-delete release. Not reentrant, not renewed: a holder that outlives ttlMs
 * loses the lock without knowing it, so ttlMs must exceed the longest critical section.
 */
export interface LockOptions {
  /** How long the lock outlives a holder that never releases it (crash, timeout). */
  ttlMs: number;
  /** Acquire attempts in all, the first immediate. */
  attempts: number;
  /** Backoff between attempts: see backoffDelayMs. */
  retryBaseMs: number;
  retryCapMs: number;
}

export interface Lock {
  key: string;
  /** Random per acquisition: only its holder can release the lock. */
  token: string;
}

export class LockBusyError extends Error {
  constructor(readonly key: string) {
    super(`lock ${key} is held by another owner`);
  }
}

/** Takes the lock, retrying with backoff; undefined when every attempt found it held. */
export async function acquireLock(redis: Redis, key: string, options: LockOptions): Promise<Lock | undefined> {
  const token = crypto.randomUUID();
  for (let attempt = 0; attempt < options.attempts; attempt++) {
    if (attempt > 0) await sleep(backoffDelayMs(attempt - 1, options.retryBaseMs, options.retryCapMs));
    if ((await redis.set(key, token, { nx: true, px: options.ttlMs })) === "OK") return { key, token };
  }
  return undefined;
}

/** True when the lock was still ours and is released; false when it had expired meanwhile. */
export async function releaseLock(redis: Redis, lock: Lock): Promise<boolean> {
  return Number(await runLockScript(redis, releaseSource, [lock.key], [lock.token])) === 1;
}

/** Runs `critical` holding the lock, then releases it. Throws LockBusyError when it cannot be taken. */
export async function withLock<T>(redis: Redis, key: string, options: LockOptions, critical: () => Promise<T>): Promise<T> {
  const lock = await acquireLock(redis, key, options);
  if (!lock) throw new LockBusyError(key);
  try {
    return await critical();
  } finally {
    // A failed release is left to the TTL: the critical section's work is done either way.
    const released = await releaseLock(redis, lock).catch(() => undefined);
    if (released === false) console.warn(`lock ${key} expired before its holder released it; exclusion was lost`);
  }
}
