// Staff passes (docs/lanes.md): the admin mints a Queue-Pass for a named user, past the sale's
// line and never past its stock. It is a pass like any admitted one: place 0 in the user's
// passes record, alive until it expires, spent by lua/checkout.lua in the same step as the
// units, within the buyer's limit. D1 logs for whom, when and from where it was minted.
import type { Redis } from "../redis/client";
import { bucketSplitOf } from "../sales/known-sales";
import type { Sale } from "../sales/sale";
import { buyerKeys } from "../shared/keys";
import { signPass } from "./signed-claims";

/** The place a staff pass names: before every place the line gives (those start at 1). */
const STAFF_PLACE = 0;

/** A staff pass as D1 logs it. */
export interface BypassRecord {
  userId: string;
  expiresAt: number;
  mintedAt: number;
  mintedFrom: string;
}

/**
 * Mints a one-time pass for `userId` to buy from `sale` (which has a waiting room), valid for
 * the sale's pass time from its start or from now, whichever is later. A pass minted again for
 * the same user replaces the one before (the last one minted buys).
 */
export async function mintBypass(
  db: D1Database,
  redis: Redis,
  secret: string,
  sale: Sale,
  userId: string,
  mintedFrom: string,
): Promise<{ pass: string; expiresAt: number }> {
  const now = Date.now();
  const expiresAt = Math.max(now, sale.startsAt) + sale.queue.passTtlSec * 1000;
  const keys = buyerKeys(sale.id, userId, bucketSplitOf(sale));
  await db
    .prepare("INSERT INTO bypass_passes (sale_id, user_id, expires_at, minted_at, minted_from) VALUES (?1, ?2, ?3, ?4, ?5)")
    .bind(Number(sale.id), userId, expiresAt, now, mintedFrom)
    .run();
  await Promise.all([
    redis.hset(keys.passes, { [userId]: `${STAFF_PLACE}:${expiresAt}` }),
    redis.zadd(keys.live, { score: expiresAt, member: userId }),
  ]);
  return { pass: await signPass(secret, { s: sale.id, u: userId, p: STAFF_PLACE, e: expiresAt }), expiresAt };
}

/** The staff passes minted for the sale, latest first. */
export async function listBypasses(db: D1Database, saleId: string): Promise<BypassRecord[]> {
  const { results } = await db
    .prepare(
      "SELECT user_id, expires_at, minted_at, minted_from FROM bypass_passes WHERE sale_id = ? ORDER BY minted_at DESC, rowid DESC LIMIT 500",
    )
    .bind(Number(saleId))
    .all<{ user_id: string; expires_at: number; minted_at: number; minted_from: string }>();
  return results.map((r) => ({ userId: r.user_id, expiresAt: r.expires_at, mintedAt: r.minted_at, mintedFrom: r.minted_from }));
}
