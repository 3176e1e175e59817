import checkoutSource from "../../lua/checkout.lua";
import labCasSource from "../../lua/lab-cas.lua";
import purgeChunkSource from "../../lua/purge-chunk.lua";
import returnSource from "../../lua/return.lua";
import saleInitSource from "../../lua/sale-init.lua";
import type { Redis } from "./client";

// @upstash/redis' Script runs EVALSHA and falls back to EVAL on NOSCRIPT; one per client.
type Script = ReturnType<Redis["createScript"]>;
const scripts = new WeakMap<Redis, Map<string, Script>>();

function scriptFor(redis: Redis, source: string): Script {
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
  return script;
}

export function runScript<T>(redis: Redis, source: string, keys: string[], args: string[]): Promise<T> {
  return scriptFor(redis, source).exec(keys, args) as Promise<T>;
}

export const LUA = {
  checkout: checkoutSource,
  labCas: labCasSource,
  purgeChunk: purgeChunkSource,
  return: returnSource,
  saleInit: saleInitSource,
} as const;
