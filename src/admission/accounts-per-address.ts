// One account, one seat: many user ids from one client address in one sale look like one
// person (or one bot farm) with many accounts. The first `limit` user ids seen from an
// address keep going; the ones after them are flagged, to be handled like denied callers.
// Costs one Redis round trip (one script call, lua/address-seat.lua), so it belongs where a
// round trip is affordable (the queue join), not in front of checkout's one script call.
import type { Redis } from "../redis/client";
import { LUA, runScript } from "../redis/scripts";
import { addressUsersKey } from "../shared/keys";

export interface AccountsPerAddress {
  /** User ids one address may bring to a sale before the next are flagged; 0: off. @default 0 */
  limit: number;
  /** How long an address's record lasts (the sale's remaining length, say). */
  ttlSeconds: number;
}

/**
 * Records `userId` as seen from `ip` in the sale, and says whether it is beyond the first
 * `limit` user ids from there (the same user id asking again keeps its place). False when
 * the check is off or the address is unknown.
 */
export async function beyondAccountsPerAddress(
  redis: Redis,
  saleId: string,
  ip: string | undefined,
  userId: string,
  { limit, ttlSeconds }: AccountsPerAddress,
): Promise<boolean> {
  if (limit <= 0 || !ip) return false;
  // Numbered by Redis in one script: places scored by each isolate's clock could be taken
  // out of order by requests arriving together, and let more than `limit` through.
  const place = await runScript<number>(redis, LUA.addressSeat, [addressUsersKey(saleId, ip)], [userId, String(ttlSeconds)]);
  return place >= limit;
}
