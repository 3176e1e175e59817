import type { Redis } from "../redis/client";
import { saleKeys } from "../redis/keys";
import { LUA, runScript } from "../redis/scripts";

export type Reservation =
  | { outcome: "OK"; orderId: string; remaining: number; reservedAt: number }
  | { outcome: "ALREADY_PURCHASED"; orderId: string }
  | { outcome: "SOLD_OUT" }
  | { outcome: "RATE_LIMITED"; retryAfterMs: number; burst: number }
  | { outcome: "SALE_NOT_STARTED"; startsAt: number }
  | { outcome: "SALE_ENDED"; endsAt: number }
  | { outcome: "SALE_NOT_FOUND" };

type ScriptReply = [string, ...(string | number)[]];

/** One EVALSHA (lua/checkout.lua): the whole atomic reservation in one round trip. */
export async function reserve(redis: Redis, saleId: string, userId: string): Promise<Reservation> {
  const keys = saleKeys(saleId);
  const [outcome, a, b, c] = await runScript<ScriptReply>(
    redis,
    LUA.checkout,
    [keys.meta, keys.buyers, keys.outbox, keys.admission],
    [userId],
  );
  switch (outcome) {
    case "OK":
      return { outcome, orderId: String(a), remaining: Number(b), reservedAt: Number(c) };
    case "ALREADY_PURCHASED":
      return { outcome, orderId: String(a) };
    case "SOLD_OUT":
    case "SALE_NOT_FOUND":
      return { outcome };
    case "RATE_LIMITED":
      return { outcome, retryAfterMs: Number(a), burst: Number(b) };
    case "SALE_NOT_STARTED":
      return { outcome, startsAt: Number(a) };
    case "SALE_ENDED":
      return { outcome, endsAt: Number(a) };
    default:
      throw new Error(`checkout script replied ${String(outcome)}`);
  }
}
