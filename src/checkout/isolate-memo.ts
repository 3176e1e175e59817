import { IsolateCache } from "../isolate/isolate-cache";
import { LocalTokenBuckets } from "../isolate/token-buckets";
import type { Reservation } from "../shared/checkout-reply";
import type { Admission, Refusal } from "../shared/refusal";

/**
 * What the memo learns from: a reservation, as lua/checkout.lua or any other store that
 * decides checkouts answers it. A store without an admission bucket (the lab's merged
 * Durable Object) leaves `admission` out.
 */
export type Decided =
  | Exclude<Reservation, { code: "OK" }>
  | (Pick<Extract<Reservation, { code: "OK" }>, "code" | "orderId" | "remaining" | "held" | "limit"> & {
      admission?: Admission;
    });

/**
 * What this isolate has learnt from earlier script replies, so repeat losers are refused
 * with no network at all. Every fact here is one Redis stated; none is guessed, and none
 * outlives the time in which Redis could have changed its mind by much: units come back
 * (expiry, cancellation, dead letters), buyers may buy again, sales are paused, resumed and
 * edited. So every entry lives about a second, which still absorbs a stampede's repeats.
 */

/** Sold out, a buyer at their limit, a paused or cancelled sale: each may be undone any moment. */
const SHORT_TTL_MS = 1_000;
/** A sale's window may be edited before it starts; a not-started crowd re-asks every few seconds. */
const WINDOW_TTL_MS = 5_000;
/** This isolate's clock may differ from Redis' a little. */
export const CLOCK_SKEW_MS = 1_000;

/** Sold-out variants (the whole sale's for a sale without), keyed by soldOutKey. */
const soldOut = new IsolateCache<true>({ ttlMs: SHORT_TTL_MS, maxEntries: 10_000 });
/**
 * Bumped when a sale's units come back or it is edited: every sold-out variant it had is
 * forgotten at once (the keys of the old generation are never read again, and age out).
 */
const soldOutGenerations = new Map<string, number>();
/** `variant` as the checkout named it ("" for none): a sale without variants is sold out under both its names. */
const soldOutKey = (saleId: string, variant: string) => `${saleId}\n${soldOutGenerations.get(saleId) ?? 0}\n${variant}`;
function forgetSoldOut(saleId: string): void {
  if (soldOutGenerations.size >= 10_000) soldOutGenerations.clear();
  soldOutGenerations.set(saleId, (soldOutGenerations.get(saleId) ?? 0) + 1);
}
/** Buyers at their limit, with their latest order. */
const atLimit = new IsolateCache<string>({ ttlMs: SHORT_TTL_MS, maxEntries: 100_000, maxBytes: 8 << 20 });
const saleState = new IsolateCache<"SALE_PAUSED" | "SALE_CANCELLED" | "DRAW_ONLY">({ ttlMs: SHORT_TTL_MS, maxEntries: 1_000 });
const throttled = new IsolateCache<{ until: number; admission: Admission }>({ ttlMs: 1_000, maxEntries: 1_000 });
/**
 * A local copy of each sale's admission bucket. This isolate's own attempts alone drain it
 * no faster than everyone's drain the shared one in Redis, so when the local copy is empty
 * the shared one is too: refusing here spares Redis the stampede without turning away a
 * buyer Redis would admit. Redis spends a token only on a reservation, so every other
 * attempt gives its local token back.
 */
const admissionBuckets = new Map<string, LocalTokenBuckets>();
/** Unknown sale ids: a probe for the same id reaches Redis and D1 at most once a second. */
const notFound = new IsolateCache<true>({ ttlMs: SHORT_TTL_MS, maxEntries: 10_000 });
const windows = new IsolateCache<{ startsAt?: number; endsAt?: number }>({ ttlMs: WINDOW_TTL_MS, maxEntries: 1_000 });
/** Sales with a waiting room: a checkout without a Queue-Pass is refused here, so bots without one cost Redis nothing. */
const queued = new IsolateCache<true>({ ttlMs: SHORT_TTL_MS, maxEntries: 1_000 });
/**
 * Sales in a presale lane's window, by their public start: until then a checkout without an
 * access code is refused here (the window's end is known to the millisecond, so the entry
 * lives until a clock skew's margin before it, or a few seconds at most).
 */
const codesOnly = new IsolateCache<number>({ ttlMs: WINDOW_TTL_MS, maxEntries: 1_000 });

/**
 * Sales that just sold to, or refused on stock or limit, a plain checkout (see
 * `refusalWhileWaiting`): Redis checked no pass, so the sale had no waiting room.
 */
const passOptional = new IsolateCache<true>({ ttlMs: SHORT_TTL_MS, maxEntries: 1_000 });

const buyerKey = (saleId: string, userId: string) => `${saleId}\n${userId}`;

interface LocalRefusalOptions {
  /**
   * False leaves what a buyer holds, and the stock, to Redis: a retry carrying its
   * Idempotency-Key may be owed the order it reserved (the unit that sold the sale out,
   * its answer lost), which lua/checkout.lua answers before it looks at stock.
   */
  trustBuyers?: boolean;
  /** The checkout carries a Queue-Pass. */
  hasPass?: boolean;
  /** The checkout carries an access code. */
  hasCode?: boolean;
  /** The variant it names ("" for none). */
  variant?: string;
}

/**
 * A refusal this isolate can give on its own, or undefined when Redis must decide: what the
 * memo knows of the sale and the buyer, then the sale's admission bucket (which takes a
 * local token: see `memo.admissionTokenUnused`).
 */
export function localRefusal(
  saleId: string,
  userId: string,
  options: LocalRefusalOptions = {},
  now = Date.now(),
): Refusal | undefined {
  return knownRefusal(saleId, userId, options, now) ?? admissionRefusal(saleId, now);
}

/** What the memo knows of the sale and the buyer, in the order lua/checkout.lua checks it. */
function knownRefusal(
  saleId: string,
  userId: string,
  { trustBuyers = true, hasPass = false, hasCode = false, variant = "" }: LocalRefusalOptions,
  now: number,
): Refusal | undefined {
  if (notFound.get(saleId, now)) return { code: "SALE_NOT_FOUND" };
  const state = saleState.get(saleId, now);
  if (state) return { code: state };
  const window = windows.get(saleId, now);
  if (window?.endsAt !== undefined && now >= window.endsAt + CLOCK_SKEW_MS) return { code: "SALE_ENDED", endsAt: window.endsAt };
  if (window?.startsAt !== undefined && now < window.startsAt - CLOCK_SKEW_MS) {
    return { code: "SALE_NOT_STARTED", startsAt: window.startsAt };
  }
  // In a lane's window the code comes first, as lua/checkout.lua asks: without one no line lets anyone in.
  const publicStartsAt = hasCode || !trustBuyers ? undefined : codesOnly.get(saleId, now);
  if (publicStartsAt !== undefined && now < publicStartsAt - CLOCK_SKEW_MS)
    return { code: "ACCESS_CODE_REQUIRED", publicStartsAt };
  if (!hasPass && trustBuyers && queued.get(saleId, now)) return { code: "QUEUE_PASS_REQUIRED" };
  const orderId = trustBuyers ? atLimit.get(buyerKey(saleId, userId), now) : undefined;
  if (orderId !== undefined) return { code: "ALREADY_PURCHASED", orderId: orderId || undefined };
  if (trustBuyers && soldOut.get(soldOutKey(saleId, variant), now)) return { code: "SOLD_OUT", variant: variant || undefined };
  return undefined;
}

/** A throttle Redis named, or the local copy of the sale's admission bucket empty. */
function admissionRefusal(saleId: string, now: number): Refusal | undefined {
  const throttle = throttled.get(saleId, now);
  if (throttle && now < throttle.until) {
    return { code: "RATE_LIMITED", retryAfterMs: throttle.until - now, admission: throttle.admission };
  }
  const bucket = admissionBuckets.get(saleId);
  const taken = bucket?.take(saleId, now);
  if (bucket && taken && !taken.ok) {
    return { code: "RATE_LIMITED", retryAfterMs: taken.retryAfterMs, admission: { rate: bucket.rate, burst: bucket.burst } };
  }
  return undefined;
}

/**
 * For a plain checkout (one unit, no Idempotency-Key, no Queue-Pass) waiting in a merged
 * call's lane (src/checkout/merged-calls.ts): the refusal Redis would give it now, when the
 * memo knows its variant sold out, so it need not ride the next call. ALREADY_PURCHASED for
 * a buyer the memo knows at their limit (Redis checks the limit first), else SOLD_OUT, as
 * the door would answer it (a buyer at their limit this isolate has not seen is told
 * SOLD_OUT, there and here: nothing short of Redis knows). Anything else is left to Redis:
 * a key's retry may be owed its order, a pass is checked before stock, two units may be over
 * the buyer's limit, and a sale not known to take checkouts without a pass may have a
 * waiting room.
 */
export function refusalWhileWaiting(saleId: string, userId: string, variant = "", now = Date.now()): Refusal | undefined {
  if (!soldOut.get(soldOutKey(saleId, variant), now) || !passOptional.get(saleId, now)) return undefined;
  const refusal = knownRefusal(saleId, userId, { variant }, now);
  return refusal?.code === "SOLD_OUT" || refusal?.code === "ALREADY_PURCHASED" ? refusal : undefined;
}

/** A checkout of a merged call, as the memo learns from its answer. */
export interface CalledCheckout {
  userId: string;
  /** As the checkout named it; absent: none. */
  variant?: string;
  /** One unit, no Idempotency-Key, no Queue-Pass. */
  plain: boolean;
}

/** What an answer says of the variant's stock and the buyer's limit: facts that may be learnt twice. */
function knowStockAndBuyer(saleId: string, userId: string, r: Decided, variant: string): void {
  // `remaining`: what is left of the variant bought; a lane's allotment sold (inLane) says nothing
  // of it, nor does a quiet pass's refusal (told sold out whatever is left).
  if ((r.code === "SOLD_OUT" && !r.inLane && !r.quiet) || (r.code === "OK" && r.remaining === 0))
    soldOut.set(soldOutKey(saleId, variant), true);
  if (r.code === "OK" && r.held >= r.limit) atLimit.set(buyerKey(saleId, userId), r.orderId);
  if (r.code === "ALREADY_PURCHASED") atLimit.set(buyerKey(saleId, userId), r.orderId ?? "");
}

function knowAdmission(saleId: string, { rate, burst }: Admission): void {
  const known = admissionBuckets.get(saleId);
  if (known?.rate === rate && known.burst === burst) return;
  if (admissionBuckets.size >= 1_000) admissionBuckets.clear();
  admissionBuckets.set(saleId, new LocalTokenBuckets(rate, burst, 1));
}

function knowWindow(saleId: string, bound: { startsAt?: number; endsAt?: number }): void {
  windows.set(saleId, { ...windows.get(saleId), ...bound });
}

export const memo = {
  /**
   * Remembers what Redis (or the lab's object) answered for one buyer. `askedAt` is when
   * it was asked: a throttle counts from then, not from when the answer arrived.
   */
  learn(saleId: string, userId: string, r: Decided, askedAt: number, variant = "") {
    // Redis spends an admission token only on a reservation: mirror that locally.
    if (r.code !== "OK") memo.admissionTokenUnused(saleId);
    knowStockAndBuyer(saleId, userId, r, variant);
    switch (r.code) {
      case "OK":
        if (r.admission) knowAdmission(saleId, r.admission);
        return;
      case "SOLD_OUT":
      case "ALREADY_PURCHASED":
        return;
      case "SALE_NOT_STARTED":
        knowWindow(saleId, { startsAt: r.startsAt });
        return;
      case "SALE_ENDED":
        knowWindow(saleId, { endsAt: r.endsAt });
        return;
      case "SALE_PAUSED":
      case "SALE_CANCELLED":
      case "DRAW_ONLY":
        saleState.set(saleId, r.code);
        return;
      case "SALE_NOT_FOUND":
        notFound.set(saleId, true);
        return;
      case "RATE_LIMITED": {
        knowAdmission(saleId, r.admission);
        const until = askedAt + r.retryAfterMs;
        throttled.set(saleId, { until, admission: r.admission }, Math.max(0, until - Date.now()));
        return;
      }
      case "QUEUE_PASS_REQUIRED":
        queued.set(saleId, true);
        return;
      case "ACCESS_CODE_REQUIRED":
        codesOnly.set(saleId, r.publicStartsAt, Math.max(0, Math.min(WINDOW_TTL_MS, r.publicStartsAt - Date.now())));
        return;
      case "ACCESS_CODE_INVALID":
      case "ACCESS_CODE_USED":
      case "QUANTITY_UNAVAILABLE":
      case "VARIANT_REQUIRED":
      case "VARIANT_NOT_FOUND":
      case "PER_USER_LIMIT_EXCEEDED":
      case "IDEMPOTENCY_KEY_REUSED":
      case "BUSY":
      case "QUEUE_PASS_INVALID":
      case "QUEUE_PASS_USED":
      case "QUEUE_PASS_EXPIRED":
        return;
    }
  },
  /**
   * What a merged call's answers tell the checkouts still waiting in its lane, learnt in the
   * request that sent it the moment they land, before its next call is made: sold-out
   * variants, buyers at their limit, and (from a plain checkout's answer) that the sale takes
   * checkouts without a pass. Each checkout's own request learns the rest (`learn`) when it
   * picks its answer up.
   */
  learnFromCall(saleId: string, checkouts: readonly CalledCheckout[], answers: readonly Decided[]) {
    let noPassNeeded = false;
    for (const [i, r] of answers.entries()) {
      const { userId, variant = "", plain } = checkouts[i] as CalledCheckout;
      knowStockAndBuyer(saleId, userId, r, variant);
      noPassNeeded ||= plain && (r.code === "OK" || r.code === "SOLD_OUT" || r.code === "ALREADY_PURCHASED");
    }
    // Once a call, not once an answer: a crowd's call carries a hundred of them.
    if (noPassNeeded) passOptional.set(saleId, true);
  },
  /** Redis reserved nothing for this attempt: give back the local token it took. */
  admissionTokenUnused(saleId: string) {
    admissionBuckets.get(saleId)?.refund(saleId);
  },
  /** Units came back to the sale and the buyer holds fewer: forget both at once here. */
  returned(saleId: string, userId: string) {
    atLimit.delete(buyerKey(saleId, userId));
    forgetSoldOut(saleId);
  },
  /**
   * Units came back to these buyers' sales (the jobs queue, the cron): this isolate forgets it
   * saw them at their limit (or the sale sold out) at once; other isolates forget within the memo's second.
   */
  returnedAll(orders: readonly { saleId: string; userId: string }[]) {
    for (const order of orders) memo.returned(order.saleId, order.userId);
  },
  /** The sale changed (an admin edit, a restore): forget what this isolate knew of it (src/sales/known-sales.ts forgetSale). */
  saleChanged(saleId: string) {
    saleState.delete(saleId);
    windows.delete(saleId);
    forgetSoldOut(saleId);
    notFound.delete(saleId);
    queued.delete(saleId);
    passOptional.delete(saleId);
  },
};

/**
 * A checkout with the memo in front of the store that decides it: refused here, with no
 * network, when the memo knows the answer; else decided by `decide` and remembered. The
 * lab's copies of this design (atomic, durable-object-merged) go through it; the checkout
 * route takes the same two steps among its own (src/routes/checkout.ts).
 */
export async function decideWithMemo<D extends Decided>(
  saleId: string,
  userId: string,
  decide: () => Promise<D>,
): Promise<D | Refusal> {
  const refusal = localRefusal(saleId, userId);
  if (refusal) return refusal;
  const askedAt = Date.now();
  let decided: D;
  try {
    decided = await decide();
  } catch (err) {
    memo.admissionTokenUnused(saleId);
    throw err;
  }
  memo.learn(saleId, userId, decided, askedAt);
  return decided;
}
