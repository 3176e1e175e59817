import type { Redis } from "@upstash/redis/cloudflare";
import addressSeatSource from "../../lua/address-seat.lua";
import bloomSource from "../../lua/bloom.lua";
import cacheEvictSource from "../../lua/cache-evict.lua";
import cachePutSource from "../../lua/cache-put.lua";
import cacheReadSource from "../../lua/cache-read.lua";
import checkoutSource from "../../lua/checkout.lua";
import drawEnterSource from "../../lua/draw-enter.lua";
import drawSealSource from "../../lua/draw-seal.lua";
import labCasSource from "../../lua/lab-cas.lua";
import labDesignCardSource from "../../lua/lab-design-card.lua";
import purgeChunkSource from "../../lua/purge-chunk.lua";
import restoreSource from "../../lua/restore.lua";
import returnSource from "../../lua/return.lua";
import saleSyncSource from "../../lua/sale-sync.lua";
import slidingWindowSource from "../../lua/sliding-window.lua";
import waitingRoomJoinSource from "../../lua/waiting-room-join.lua";
import waitingRoomProgressSource from "../../lua/waiting-room-progress.lua";

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
  addressSeat: addressSeatSource,
  bloom: bloomSource,
  cacheEvict: cacheEvictSource,
  cachePut: cachePutSource,
  cacheRead: cacheReadSource,
  checkout: checkoutSource,
  drawEnter: drawEnterSource,
  drawSeal: drawSealSource,
  labCas: labCasSource,
  labDesignCard: labDesignCardSource,
  purgeChunk: purgeChunkSource,
  waitingRoomJoin: waitingRoomJoinSource,
  waitingRoomProgress: waitingRoomProgressSource,
  restore: restoreSource,
  return: returnSource,
  saleSync: saleSyncSource,
  slidingWindow: slidingWindowSource,
} as const;
