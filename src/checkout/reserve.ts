import type { Redis } from "../redis/client";
import { saleKeys } from "../redis/keys";
import { LUA, runScript } from "../redis/scripts";

export type Reservation =
  | { outcome: "OK"; orderId: string; remaining: number; reservedAt: number; admission: Admission }
  | { outcome: "ALREADY_PURCHASED"; orderId: string }
  | { outcome: "SOLD_OUT" }
  | { outcome: "RATE_LIMITED"; retryAfterMs: number; admission: Admission }
  | { outcome: "SALE_NOT_STARTED"; startsAt: number }
  | { outcome: "SALE_ENDED"; endsAt: number }
  | { outcome: "SALE_NOT_FOUND" };

/** The sale's admission token bucket: refill per second and capacity. */
export interface Admission {
  rate: number;
  burst: number;
}

type ScriptReply = [string, ...(string | number)[]];

/** One EVALSHA (lua/checkout.lua): the whole atomic reservation in one round trip. */
export async function reserve(redis: Redis, saleId: string, userId: string): Promise<Reservation> {
  const keys = saleKeys(saleId);
  const [outcome, a, b, c, d, e] = await runScript<ScriptReply>(
    redis,
    LUA.checkout,
    [keys.meta, keys.buyers, keys.outbox, keys.admission],
    [userId],
  );
  switch (outcome) {
    case "OK":
      return {
        outcome,
        orderId: String(a),
        remaining: Number(b),
        reservedAt: Number(c),
        admission: { rate: Number(d), burst: Number(e) },
      };
    case "ALREADY_PURCHASED":
      return { outcome, orderId: String(a) };
    case "SOLD_OUT":
    case "SALE_NOT_FOUND":
      return { outcome };
    case "RATE_LIMITED":
      return { outcome, retryAfterMs: Number(a), admission: { burst: Number(b), rate: Number(c) } };
    case "SALE_NOT_STARTED":
      return { outcome, startsAt: Number(a) };
    case "SALE_ENDED":
      return { outcome, endsAt: Number(a) };
    default:
      throw new Error(`checkout script replied ${String(outcome)}`);
  }
}
