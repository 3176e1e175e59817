import type { Redis } from "@upstash/redis";

// The locks' own script runner, so the library needs nothing of the application:
// @upstash/redis' Script runs EVALSHA and falls back to EVAL on NOSCRIPT; one per client
// and source, so the SHA is computed once.
type Script = ReturnType<Redis["createScript"]>;
const scripts = new WeakMap<Redis, Map<string, Script>>();

export function runLockScript(redis: Redis, source: string, keys: string[], args: string[]): Promise<unknown> {
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
  return script.exec(keys, args);
}
