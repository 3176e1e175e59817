import { backoffDelayMs, sleep } from "../../locks/backoff";
import { hashFields } from "../../redis/client";
import { LUA, runScript } from "../../redis/scripts";
import { labKeys } from "../keys";
import type { Strategy } from "../strategy";

const CAS_ATTEMPTS = 10;
const RETRY_BASE_MS = 5;
const RETRY_CAP_MS = 100;

/**
 * Optimistic concurrency: read stock and version, write only if the version is still the
 * one read (lua/lab-cas.lua), otherwise read again, a bounded number of times.
 * One order per user is an insert, not an update, so a version cannot guard it (the
 * textbook version takes a lock there); HSETNX claims the user in one command and the
 * claim is given back when no unit is bought.
 */
export const optimisticCheckout: Strategy = async ({ redis }, labSaleId, userId) => {
  const keys = labKeys("optimistic", labSaleId);
  if ((await redis.hsetnx(keys.buyers, userId, 1)) === 0) return { code: "ALREADY_PURCHASED" };
  const giveBack = async (code: "SOLD_OUT" | "SALE_NOT_FOUND" | "BUSY") => {
    await redis.hdel(keys.buyers, userId);
    return { code };
  };
  for (let attempt = 0; attempt < CAS_ATTEMPTS; attempt++) {
    if (attempt > 0) await sleep(backoffDelayMs(attempt - 1, RETRY_BASE_MS, RETRY_CAP_MS));
    const [remaining, version] = await hashFields(redis, keys.meta, "remaining", "seq");
    if (remaining == null || version == null) return giveBack("SALE_NOT_FOUND");
    if (Number(remaining) <= 0) return giveBack("SOLD_OUT");
    const written = await runScript<number>(redis, LUA.labCas, [keys.meta], [version, String(Number(remaining) - 1)]);
    if (written > 0) return { code: "OK", orderId: String(written) };
  }
  return giveBack("BUSY");
};
