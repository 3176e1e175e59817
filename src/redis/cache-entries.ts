import { hashRecord, type Redis } from "./client";
import { LUA, runScript } from "./scripts";

/** An entry and the floor that evicts it (lua/cache-read.lua). */
export interface EntryKeys {
  entry: string;
  floor: string;
}

export type EntryState = "fresh" | "stale" | "missing";

export interface EntryRead {
  /** Redis time of the read: a rebuild that follows it writes it as its version. */
  nowMs: number;
  state: EntryState;
  body: string;
  /** The live hash's fields (empty when none was asked for, or it is absent). */
  live: Record<string, string>;
}

/** How long an entry is fresh (soft) and how long it stays to be served stale (hard). */
export interface Ttl {
  softMs: number;
  hardMs: number;
}

/**
 * One entry, its logical expiry against Redis' clock and the eviction floor, and the whole
 * `liveHash` under the same hash tag, whose figures are never cached: one EVALSHA.
 */
export async function readEntry(redis: Redis, keys: EntryKeys, liveHash?: string): Promise<EntryRead> {
  const [nowMs, state, body, ...pairs] = await runScript<[number, EntryState, string, ...string[]]>(
    redis,
    LUA.cacheRead,
    liveHash === undefined ? [keys.entry, keys.floor] : [keys.entry, keys.floor, liveHash],
    [],
  );
  return { nowMs: Number(nowMs), state, body: String(body), live: hashRecord(pairs) };
}

/**
 * Writes an entry built from a read that began at `version` (Redis time), unless a newer one
 * is there or an eviction came after that read; `setIfNewer: false` skips that comparison
 * (only to show what goes wrong without it). True when written.
 */
export async function putEntry(
  redis: Redis,
  keys: EntryKeys,
  version: number,
  body: string,
  ttl: Ttl,
  { setIfNewer = true } = {},
): Promise<boolean> {
  const written = await runScript<number>(
    redis,
    LUA.cachePut,
    [keys.entry, keys.floor],
    [String(version), body, String(Math.round(ttl.softMs)), String(Math.round(ttl.hardMs)), setIfNewer ? "1" : "0"],
  );
  return Number(written) === 1;
}

/** Deletes `entries` and raises `floor`, kept `floorTtlMs`: every entry read before now counts as missing. */
export async function evictEntries(redis: Redis, floor: string, entries: string[], floorTtlMs: number): Promise<void> {
  await runScript(redis, LUA.cacheEvict, [floor, ...entries], [String(floorTtlMs)]);
}

/**
 * `ms` spread uniformly over ±`spread` of itself, so entries written together (a restart, a
 * bulk load) do not all expire in the same instant and send their readers to the database
 * together (cache avalanche).
 */
export function jittered(ms: number, spread: number, random: () => number = Math.random): number {
  return ms * (1 - spread + 2 * spread * random());
}
