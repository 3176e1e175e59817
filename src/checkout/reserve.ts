import { countOrdersInFunnel } from "../analytics/funnel";
import type { KeepAlive } from "../isolate/shared-work";
import type { Redis } from "../redis/client";
import { LUA, runScript } from "../redis/scripts";
import { parseCheckoutReply, ReplyLayoutError, type Reservation } from "../shared/checkout-reply";
import { type BucketSplit, checkoutScriptKeys, type Line, PUBLIC_LINE } from "../shared/keys";
import { DEFAULT_VARIANT, QUEUE_MESSAGE_MAX_ORDERS } from "../shared/limits";
import type { OrderMessage } from "../shared/messages";
import { memo, refusalWhileWaiting } from "./isolate-memo";
import { countLocalRefusal } from "./local-outcomes";
import { MergedCalls, type MergedCallsOptions } from "./merged-calls";

export type { Reservation };

/**
 * One buyer's checkout: who, how many units, the Idempotency-Key that makes its retries safe,
 * and the place its verified Queue-Pass names (a queued sale sells only against it).
 */
export interface CheckoutItem {
  userId: string;
  quantity: number;
  /** As the buyer named it; absent: none (a sale without variants). */
  variant?: string;
  idempotencyKey?: string;
  passPlace?: number;
  /** The presale lane whose own line gave the pass (docs/lanes.md); absent: the public line's, or no pass. */
  passLane?: string;
  /** A draw's offer to one of its selected entries (src/checkout/draw-offers.ts), never a buyer's own checkout. */
  drawOffer?: true;
  /** The hash of the access code the buyer sent (src/admission/access-codes.ts); checked only while a presale lane is open. */
  accessCode?: string;
  /** The request's W3C traceparent (src/shared/trace.ts): its order carries it to the outbox, the queue and D1. */
  traceparent?: string;
}

/**
 * Merging checkouts of one sale in this isolate: at most 100 buyers a call, one call in
 * flight per sale. A batch of 100 keeps the script well under a millisecond of Redis time
 * (a few microseconds per buyer). A call takes at most REDIS_TIMEOUT_MS and one retry; a
 * waiter may sit behind one call and then ride the next. The lab's merged Durable Object
 * merges by the same rule (src/lab/strategies/durable-object-merged.ts).
 */
export const CHECKOUT_MERGING: MergedCallsOptions = {
  // One call's orders make one queue message; lua/checkout.lua refuses larger batches.
  maxItems: QUEUE_MESSAGE_MAX_ORDERS,
  maxWaitMs: 8_000,
  stallMs: 4_000,
  // 20 calls and 20 queue sends: far inside one request's subrequest limits. 5 s: well
  // inside the 30 s a request's waitUntil may run after its response.
  leadCalls: 20,
  leadMs: 5_000,
  // A waiter's first look comes when its call is due (MergedCalls: a moving average of the
  // calls); 2 ms before any call has answered. Then it looks every few ms, backing off to 8.
  pollMs: 2,
};

const calls = new MergedCalls<CheckoutItem, Reservation>(CHECKOUT_MERGING);

interface ReserveOptions {
  /**
   * How the sale's buyers are split as this isolate knows it (src/sales/known-sales.ts).
   * Should the sale's own bucket count differ (an edit just before the start), the script does
   * nothing and names it, and the call is sent again split by that.
   */
  buckets: BucketSplit;
  /** The sale's presale lanes in start order: a call names the line of the latest lane its passes are of (lineOfCall). */
  lanes?: readonly string[];
  /** The request's waitUntil: keeps it alive while others may wait on its call. */
  keepAlive: KeepAlive;
  /**
   * Runs once per merged call, in the request that sent it, with every order the call
   * reserved (this buyer's and the others'), before any of them is answered, and the sale's
   * order sequence after the call (the orders were numbered up to it).
   */
  onReserved?: (orders: OrderMessage[], sequence: number) => void;
}

/** One unit, no Idempotency-Key, Queue-Pass or access code: the memo may answer it while it waits (refusalWhileWaiting). */
const isPlain = (item: CheckoutItem) =>
  item.quantity === 1 &&
  item.idempotencyKey === undefined &&
  item.passPlace === undefined &&
  item.accessCode === undefined &&
  !item.drawOffer;

/** The item's claim as lua/checkout.lua takes it: a pass's place (and "@<lane>" for a lane's line), "draw" for a draw's offer, "" for none. */
function claimOf(item: CheckoutItem): string {
  if (item.drawOffer) return "draw";
  if (item.passPlace === undefined) return "";
  return item.passLane === undefined ? String(item.passPlace) : `${item.passPlace}@${item.passLane}`;
}

/**
 * The lane's line a call names the keys of: the latest lane (in `lanes`' order) any of its
 * passes is of. Only that lane's window can be open: a line admits from its lane's start, so a
 * pass of it means the lanes before it have closed. PUBLIC_LINE when no pass is a lane's.
 */
function lineOfCall(items: readonly CheckoutItem[], lanes: readonly string[]): Line {
  let line: Line = PUBLIC_LINE;
  for (const { passLane } of items)
    if (passLane !== undefined && (line === PUBLIC_LINE || lanes.indexOf(passLane) > lanes.indexOf(line))) line = passLane;
  return line;
}

/**
 * The whole atomic reservation (lua/checkout.lua). Checkouts this isolate holds for the
 * same sale at the same moment travel in one EVALSHA; a lone one goes out at once. Once a
 * call's answers show the sale (or a variant) sold out, the memo refuses the checkouts
 * still waiting for it without another call, and counts them as the door's refusals.
 */
export function reserve(redis: Redis, saleId: string, item: CheckoutItem, options: ReserveOptions): Promise<Reservation> {
  const answerHere = (waiting: CheckoutItem) => {
    const refusal = isPlain(waiting) ? refusalWhileWaiting(saleId, waiting.userId, waiting.variant) : undefined;
    if (refusal) countLocalRefusal(redis, saleId, refusal.code, options.keepAlive);
    return refusal;
  };
  const call = async (items: CheckoutItem[]) => {
    const reservations = await reserveAll(redis, saleId, items, options);
    const checkouts = items.map((i) => ({ userId: i.userId, variant: i.variant, plain: isPlain(i) }));
    memo.learnFromCall(saleId, checkouts, reservations);
    let sequence = 0;
    const orders = reservations.flatMap((r, i): OrderMessage[] => {
      const { userId, quantity, variant = DEFAULT_VARIANT, accessCode, traceparent } = items[i] as CheckoutItem;
      if (r.code !== "OK" || r.repeated) return [];
      sequence = r.sequence;
      const order: OrderMessage = {
        orderId: r.orderId,
        saleId,
        userId,
        quantity,
        variant,
        reservedAt: r.reservedAt,
        ...(traceparent !== undefined && { traceparent }),
      };
      return [r.lane === undefined ? order : { ...order, lane: r.lane, accessCode }];
    });
    countOrdersInFunnel("reserved", orders);
    if (orders.length > 0) options.onReserved?.(orders, sequence);
    return reservations;
  };
  return calls.submit(saleId, item, call, options.keepAlive, answerHere);
}

async function reserveAll(
  redis: Redis,
  saleId: string,
  items: CheckoutItem[],
  { buckets, lanes = [] }: ReserveOptions,
): Promise<Reservation[]> {
  // The counters' minute by this isolate's clock; the fields carry Redis' own second.
  const minute = Math.floor(Date.now() / 60_000);
  const line = lineOfCall(items, lanes);
  let splitBy = buckets;
  for (let attempt = 0; attempt < 2; attempt++) {
    const { keys, bucketSlots, codeKeyCount, codeRefs } = checkoutScriptKeys(
      saleId,
      minute,
      splitBy,
      items.map((item) => item.userId),
      items.map((item) => item.accessCode),
      line,
    );
    const args = items.flatMap((item, i) => [
      item.userId,
      item.variant === undefined ? String(item.quantity) : `${item.quantity}@${item.variant}`,
      item.idempotencyKey ?? "",
      claimOf(item),
      String(bucketSlots[i]),
      codeRefs[i] as string,
      item.traceparent ?? "",
    ]);
    const reply = parseCheckoutReply(
      await runScript<unknown>(redis, LUA.checkout, keys, [String(splitBy.count), String(codeKeyCount), line, ...args]),
      items.length,
      items.map((item) => item.variant),
    );
    if (reply.reservations) return reply.reservations;
    splitBy = { ...splitBy, count: reply.buckets };
  }
  throw new ReplyLayoutError(`lua/checkout.lua asked twice for another bucket count (last ${splitBy.count})`);
}
