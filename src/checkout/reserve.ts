import type { Redis } from "../redis/client";
import { saleKeys } from "../redis/keys";
import { LUA, runScript } from "../redis/scripts";
import type { OrderMessage } from "../settlement/order-message";
import { QUEUE_MESSAGE_MAX_ORDERS } from "../settlement/queue-limits";
import { type KeepAlive, MergedCalls } from "./merged-calls";

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

/**
 * Merging checkouts of one sale in this isolate. A batch of 100 keeps the script well under
 * a millisecond of Redis time (a few microseconds per buyer). A call takes at most
 * REDIS_TIMEOUT_MS and one retry; a waiter may sit behind one call and then ride the next.
 */
const calls = new MergedCalls<string, Reservation>({
  // One call's orders make one queue message; lua/checkout.lua refuses larger batches.
  maxItems: QUEUE_MESSAGE_MAX_ORDERS,
  maxWaitMs: 8_000,
  stallMs: 4_000,
  // 20 calls and 20 queue sends: far inside one request's subrequest limits. 5 s: well
  // inside the 30 s a request's waitUntil may run after its response.
  leadCalls: 20,
  leadMs: 5_000,
  // A waiter looks for its answer after 2 ms, then backs off to every 8 ms.
  pollMs: 2,
});

export interface ReserveOptions {
  /** The request's waitUntil: keeps it alive while others may wait on its call. */
  keepAlive: KeepAlive;
  /**
   * Runs once per merged call, in the request that sent it, with every order the call
   * reserved (this buyer's and the others'), before any of them is answered.
   */
  onReserved?: (orders: OrderMessage[]) => void;
}

/**
 * The whole atomic reservation (lua/checkout.lua). Checkouts this isolate holds for the
 * same sale at the same moment travel in one EVALSHA; a lone one goes out at once.
 */
export function reserve(redis: Redis, saleId: string, userId: string, options: ReserveOptions): Promise<Reservation> {
  const call = async (users: string[]) => {
    const reservations = await reserveAll(redis, saleId, users);
    const orders = reservations.flatMap((r, i) =>
      r.outcome === "OK" ? [{ orderId: r.orderId, saleId, userId: users[i] as string, reservedAt: r.reservedAt }] : [],
    );
    if (orders.length > 0) options.onReserved?.(orders);
    return reservations;
  };
  return calls.submit(saleId, userId, call, options.keepAlive);
}

async function reserveAll(redis: Redis, saleId: string, users: string[]): Promise<Reservation[]> {
  const keys = saleKeys(saleId);
  const replies = await runScript<ScriptReply[]>(
    redis,
    LUA.checkout,
    [keys.meta, keys.buyers, keys.outbox, keys.admission],
    users,
  );
  return replies.map(parseReply);
}

function parseReply([outcome, a, b, c, d, e]: ScriptReply): Reservation {
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
