import type { Redis } from "@upstash/redis";
import lockAcquire from "../../lua/lock-acquire.lua";
import lockRelease from "../../lua/lock-release.lua";
import lockRenew from "../../lua/lock-renew.lua";
import reentrantAcquire from "../../lua/reentrant-acquire.lua";
import reentrantRelease from "../../lua/reentrant-release.lua";
import semaphoreAcquire from "../../lua/semaphore-acquire.lua";
import semaphoreAvailable from "../../lua/semaphore-available.lua";
import semaphoreRelease from "../../lua/semaphore-release.lua";

/** Every script of the library; each file's header says what it takes and replies. */
export const LOCK_LUA = {
  lockAcquire,
  lockRelease,
  lockRenew,
  reentrantAcquire,
  reentrantRelease,
  semaphoreAcquire,
  semaphoreAvailable,
  semaphoreRelease,
} as const;

// The locks' own script runner, so the library needs nothing of the application:
// @upstash/redis' Script runs EVALSHA and falls back to EVAL on NOSCRIPT; one per client
// and source, so the SHA is computed once.
type Script = ReturnType<Redis["createScript"]>;
const scripts = new WeakMap<Redis, Map<string, Script>>();

export function runLockScript<T = unknown>(redis: Redis, source: string, keys: string[], args: (string | number)[]): Promise<T> {
  let byClient = scripts.get(redis);
  if (!byClient) {
    byClient = new Map();
    scripts.set(redis, byClient);
  }
  let script = byClient.get(source);
  if (!script) {
    script = redis.createScript(source);
    byClient.set(source, script);
  }
  return script.exec(keys, args.map(String)) as Promise<T>;
}

/** Script replies arrive as numbers, or as numeric strings when a client leaves them raw. */
export const num = (value: unknown): number => Number(value);
