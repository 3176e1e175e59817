import type { Redis } from "../../redis/client";
import { LUA } from "../../redis/scripts";
import { SlidingWindow } from "../../redis/sliding-window";
import { labKeys } from "../keys";
import type { LabOutcome, Strategy } from "../strategy";

/** The card's limit per buyer: far above a double click, so only the checkout decides here. */
const LIMIT_PER_10_SEC = 10;

const limiters = new WeakMap<Redis, SlidingWindow>();

/**
 * The rate limiter as @upstash/ratelimit's README sets one up (its sliding window, one per client,
 * so per isolate), counted by the Worker's own copy of that window: the same script and commands,
 * without the library in the Worker's bundle.
 */
function limiterFor(redis: Redis): SlidingWindow {
  let limiter = limiters.get(redis);
  if (!limiter) {
    limiter = new SlidingWindow({
      redis,
      tokens: LIMIT_PER_10_SEC,
      windowMs: 10_000,
      prefix: "lab:design-card",
      timeoutMs: 5_000,
    });
    limiters.set(redis, limiter);
  }
  return limiter;
}

/**
 * The checkout as a flash sale's design card usually draws it, for the cost comparison
 * (`npm run cost`): per buyer one rate-limit call (@upstash/ratelimit's sliding window, as src/redis/sliding-window.ts counts it), then
 * one EVAL of lua/lab-design-card.lua sent whole, no merging and no isolate memo; the card's
 * one queue message per order and its D1 insert are priced from the card, not run here (the
 * lab's copies are not sales D1 holds).
 */
export const designCardCheckout: Strategy = async ({ redis }, labSaleId, userId): Promise<LabOutcome> => {
  const { success, reset } = await limiterFor(redis).limit(userId);
  if (!success) {
    const admission = { rate: LIMIT_PER_10_SEC / 10, burst: LIMIT_PER_10_SEC };
    return { code: "RATE_LIMITED", retryAfterMs: Math.max(0, reset - Date.now()), admission };
  }
  const keys = labKeys("design-card", labSaleId);
  const reply = Number(await redis.eval(LUA.labDesignCard, [keys.meta, keys.buyers], [userId]));
  if (reply > 0) return { code: "OK", orderId: String(reply) };
  if (reply === 0) return { code: "SOLD_OUT" };
  if (reply === -1) return { code: "ALREADY_PURCHASED" };
  return { code: "SALE_NOT_FOUND" };
};
