import { catalogKeys } from "../shared/keys";
import { BLOOM } from "../shared/limits";
import type { Redis } from "./client";
import { LUA, runScript } from "./scripts";

// The catalog's Bloom filter of sale ids (lua/bloom.lua): asked before D1, so lookups of ids
// that were never created stop at Redis (cache penetration).

const run = <T>(redis: Redis, op: "add" | "fill" | "has" | "ready", ids: string[] = []) =>
  runScript<T>(
    redis,
    LUA.bloom,
    [catalogKeys.bloom, catalogKeys.bloomReady, catalogKeys.bloomFill],
    [op, String(BLOOM.bits), String(BLOOM.hashes), ...ids],
  );

/** Adds ids; returns how many were new to the filter. */
export async function bloomAdd(redis: Redis, ids: string[]): Promise<number> {
  return ids.length === 0 ? 0 : Number(await run<number>(redis, "add", ids));
}

/**
 * Whether each id may exist: false is certain, true may be wrong for about 1% of absent ids.
 * Undefined when the filter cannot be trusted yet (not filled since Redis lost it).
 */
export async function bloomMayHave(redis: Redis, ids: string[]): Promise<boolean[] | undefined> {
  const [ready, ...maybe] = (await run<number[]>(redis, "has", ids)).map(Number);
  return ready === 1 ? maybe.map((m) => m === 1) : undefined;
}

/** Whether the filter is filled and may be trusted. */
export async function bloomReady(redis: Redis): Promise<boolean> {
  return (await bloomMayHave(redis, [])) !== undefined;
}

/**
 * Adds one page of a fill from the database: the ids after `after`. Returns how many were
 * new, or undefined when the fill must go on from where fillProgress() says (another fill
 * moved it, or the bits were lost and it starts over).
 */
export async function bloomFill(redis: Redis, after: string, ids: string[]): Promise<number | undefined> {
  const added = Number(await run<number>(redis, "fill", [after, ...ids]));
  return added < 0 ? undefined : added;
}

/** The last id the fill under way has added ("0": none yet). */
export async function fillProgress(redis: Redis): Promise<string> {
  return String((await redis.get<string>(catalogKeys.bloomFill)) ?? "0");
}

/** Marks the filter filled: from now on its "no" is trusted. False when its bits were lost meanwhile (fill again). */
export async function markBloomReady(redis: Redis): Promise<boolean> {
  return Number(await run<number>(redis, "ready")) === 1;
}
