// One account, one seat: many user ids from one client address in one sale look like one
// person (or one bot farm) with many accounts. The first `limit` user ids seen from an
// address keep going; the ones after them are flagged, to be handled like denied callers.
// Costs one Redis round trip (three commands, one pipeline), so it belongs where a round
// trip is affordable (the queue join), not in front of checkout's one script call.
import type { Redis } from "../redis/client";
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
  const key = addressUsersKey(saleId, ip);
  // Scored by arrival (ms); NX keeps a user id's first arrival, so its rank never moves. One
  // pipeline, so the rank is read after the add (auto-pipelining may split commands issued
  // together over two requests in flight at once, and the rank could then come first).
  const [, rank] = await redis
    .pipeline()
    .zadd(key, { nx: true }, { score: Date.now(), member: userId })
    .zrank(key, userId)
    .expire(key, ttlSeconds)
    .exec<[unknown, number | null, unknown]>();
  return rank !== null && rank >= limit;
}
