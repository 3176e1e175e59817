// An order's life after the 202: paid, cancelled, or expired with its units back on sale.
// Every change of state is decided by one conditional D1 statement; the units go back to
// Redis afterwards, once per order (lua/return.lua), retried by the sweep until they are.
import type { Redis } from "../redis/client";
import type { JobMessage } from "../shared/messages";
import type { PaymentEvent } from "../shared/requests";
import { attemptOfCharge, claimOrder, finishAttempt } from "./payment-attempts";
import type { HeldClaim } from "./payment-claim";
import type { PaymentProvider } from "./payment-provider";

export type { EndedOrder } from "./order-transitions";

import { log } from "../shared/log";
import type { OrderRecord } from "./order-records";
import {
  type AwaitingOrder,
  cancelAwaiting,
  cancelOrdersOfCancelledSales,
  type EndedOrder,
  expireDue,
  markPaid,
  markRefundDue,
  markReturned,
  stillAwaiting,
  unreturnedOrders,
} from "./order-transitions";
import { returnUnits } from "./units";

/** Orders the sweep handles per run, per kind of work. */
const SWEEP_BATCH = 500;
/** Expiry job messages carry this many orders at most. */
const EXPIRY_MESSAGE_MAX_ORDERS = 100;

/**
 * Gives ended orders' units back and records it in D1; returns the orders whose units are
 * back. Throws when Redis cannot be reached: D1 keeps them as not returned, and the next
 * sweep tries again. An order of a sale Redis lost stays not returned in D1 too, until a
 * restore has rebuilt the sale (which counts its units as back: the return is then a no-op).
 */
export async function returnEnded(db: D1Database, redis: Redis, ended: EndedOrder[]): Promise<EndedOrder[]> {
  if (ended.length === 0) return [];
  const { done } = await returnUnits(redis, db, ended);
  await markReturned(
    db,
    done.map((o) => o.orderId),
  );
  return done;
}

/**
 * Schedules each order's expiry: a jobs-queue message delivered when its window closes, one
 * per group of orders closing in the same second. A send that fails is not an error: the
 * sweep expires what is due anyway.
 */
export async function scheduleExpiries(jobs: Queue<JobMessage>, awaiting: AwaitingOrder[], now = Date.now()): Promise<void> {
  const bySecond = new Map<number, string[]>();
  for (const o of awaiting) {
    const delay = Math.max(0, Math.ceil((o.expiresAt - now) / 1000));
    bySecond.set(delay, [...(bySecond.get(delay) ?? []), o.orderId]);
  }
  const sends: Promise<unknown>[] = [];
  for (const [delaySeconds, orderIds] of bySecond) {
    for (let i = 0; i < orderIds.length; i += EXPIRY_MESSAGE_MAX_ORDERS) {
      const chunk = orderIds.slice(i, i + EXPIRY_MESSAGE_MAX_ORDERS);
      sends.push(jobs.send({ kind: "expire-orders", orderIds: chunk }, { delaySeconds, contentType: "json" }));
    }
  }
  const results = await Promise.allSettled(sends);
  const failed = results.filter((r) => r.status === "rejected").length;
  if (failed > 0) log.warn("expiry messages not sent; the sweep will expire those orders", { failed });
}

export interface ExpiryResult {
  /** Orders this run expired and whose units came back. */
  expired: EndedOrder[];
  /** Orders of the job not due yet (the message came early): expire them later. */
  notYetDue: AwaitingOrder[];
}

/**
 * An expiry job: expires those of `orderIds` that are due, and gives back the units of every
 * one of them that ended without its units coming back (now, or in an earlier run whose
 * return failed).
 */
export async function expireOrders(db: D1Database, redis: Redis, orderIds: string[]): Promise<ExpiryResult> {
  await expireDue(db, orderIds, orderIds.length);
  const expired = await returnEnded(db, redis, await unreturnedOrders(db, orderIds.length, orderIds));
  return { expired, notYetDue: await stillAwaiting(db, orderIds) };
}

/**
 * The cron's backstop, whatever messages were lost: expires every order that is due,
 * cancels what cancelled sales' orders still hold, and gives back the units of every ended
 * order whose return has not happened yet.
 */
export async function sweepOrders(db: D1Database, redis: Redis): Promise<{ expired: number; returned: EndedOrder[] }> {
  const expired = await expireDue(db, undefined, SWEEP_BATCH);
  await cancelOrdersOfCancelledSales(db, undefined, SWEEP_BATCH);
  const returned = await returnEnded(db, redis, await unreturnedOrders(db, SWEEP_BATCH));
  return { expired: expired.length, returned };
}

/**
 * A sale was cancelled: its orders that hold units are cancelled (paid ones marked for a
 * refund) and their units given back, up to SWEEP_BATCH now; the sweep does the rest, and
 * orders still on their way are cancelled as they settle. Units not back yet (Redis
 * unreachable) are left to the sweep too. Returns the orders cancelled now.
 */
export async function cancelSaleOrders(db: D1Database, redis: Redis, saleId: string): Promise<EndedOrder[]> {
  const cancelled = await cancelOrdersOfCancelledSales(db, saleId, SWEEP_BATCH);
  await returnEnded(db, redis, cancelled).catch((err) =>
    log.warn("cancelled sale's units not returned yet; left to the sweep", { saleId }, err),
  );
  return cancelled;
}

/**
 * The owner cancels an order awaiting payment. The cancellation stands once D1 recorded it;
 * its units come back now, or through the sweep if Redis cannot be reached.
 */
export async function cancelOrder(
  db: D1Database,
  redis: Redis,
  orderId: string,
  userId: string,
): Promise<EndedOrder | undefined> {
  const cancelled = await cancelAwaiting(db, orderId, userId);
  if (cancelled) {
    await returnEnded(db, redis, [cancelled]).catch((err) =>
      log.warn("cancelled order's units not returned yet; left to the sweep", { orderId }, err),
    );
  }
  return cancelled;
}

/**
 * Another attempt holds the order's payment claim: nothing was charged. Worth asking again
 * in `retryAfterSeconds`: once that attempt's provider call has had its time. When its call
 * has timed out already (`outcomeUnknown`), the claim stays until a retry with its key learns
 * the outcome, or the payment window closes.
 */
export interface PaymentInProgress {
  kind: "in_progress";
  retryAfterSeconds: number;
  outcomeUnknown: boolean;
}

export type PayOutcome =
  | { kind: "paid" }
  | { kind: "declined"; reason: string }
  | { kind: "not_payable"; reason: string }
  | { kind: "key_reused" }
  | { kind: "timed_out" }
  | PaymentInProgress;

export interface PayRequest {
  idempotencyKey: string;
  /** SHA-256 of the request body: the same key with another body is refused. */
  fingerprint: string;
  paymentToken: string;
}

/** Why an order in this state cannot be paid (it is not awaiting payment, or its window closed). */
function notPayable(status: OrderRecord["status"]): PayOutcome {
  const reasons: Record<OrderRecord["status"], string> = {
    awaiting_payment: "the payment window has closed",
    paid: "the order is already paid",
    expired: "the order expired before it was paid",
    cancelled: "the order was cancelled",
    confirmed: "this sale has no payment step: the order is already confirmed",
    failed: "the order could not be recorded, and its units went back on sale",
  };
  return { kind: "not_payable", reason: reasons[status] };
}

/** Why a charge that landed is owed back: the order, as it is now, was paid otherwise or had ended. */
const refundReason = (status: OrderRecord["status"] | undefined): string =>
  status === "paid"
    ? "the order was already paid by another payment; this charge will be refunded"
    : "the order ended before the payment completed; the charge will be refunded";

function inProgress(held: HeldClaim, timeoutMs: number): PaymentInProgress {
  const callEndsIn = held.claimedAt + timeoutMs - held.now;
  const outcomeUnknown = callEndsIn <= 0;
  // Never later than the window's close: then the order expires whatever the claim.
  const waitMs = Math.min(outcomeUnknown ? timeoutMs : callEndsIn, held.expiresAt - held.now);
  return { kind: "in_progress", retryAfterSeconds: Math.max(1, Math.ceil(waitMs / 1000)), outcomeUnknown };
}

/**
 * Pays an order through `provider`: at most one attempt in flight per order, and at most one
 * charge per (order, Idempotency-Key). The attempt first claims the order in D1 (one
 * conditional statement): another key meanwhile is told the payment is in progress and
 * charges nothing. A retry with the same key gets the first attempt's answer (or charges
 * again under the same key, which the provider answers from its first charge, when the first
 * attempt never finished). The claim is released when the attempt ends: a decline lets the
 * next attempt in, a charge pays the order; a provider call that timed out keeps it, its
 * outcome unknown, until a retry with its key learns it or the window closes. The charge and
 * the expiry may race: whichever D1 records first wins; a charge that lands on an order that
 * ended meanwhile is recorded for refund, never dropped.
 */
export async function payOrder(
  db: D1Database,
  provider: PaymentProvider,
  order: OrderRecord,
  request: PayRequest,
  timeoutMs: number,
): Promise<PayOutcome> {
  const key = request.idempotencyKey;
  // An order that cannot be paid gets no attempt recorded (and its claim is not taken): a retry
  // with the same key meets the order as it is then, and never charges for an attempt that
  // charged nothing. An attempt that began before (charging, its outcome unknown) goes on,
  // even past the window: the provider answers from its charge.
  const claim = await claimOrder(db, order.orderId, key, request.fingerprint);
  const { attempt } = claim;
  const status = claim.status ?? order.status;
  if (!attempt) return claim.heldByAnother ? inProgress(claim.heldByAnother, timeoutMs) : notPayable(status);
  if (attempt.fingerprint !== request.fingerprint) return { kind: "key_reused" };
  if (attempt.status === "succeeded") return { kind: "paid" };
  if (attempt.status === "declined") return { kind: "declined", reason: attempt.declineReason ?? "the card was declined" };
  if (attempt.status === "refund_due") return { kind: "not_payable", reason: refundReason(status) };

  let result: Awaited<ReturnType<PaymentProvider["charge"]>>;
  try {
    result = await provider.charge(
      {
        orderId: order.orderId,
        amount: order.amount,
        currency: order.currency,
        paymentToken: request.paymentToken,
        // Scoped to the order: a client reusing a key across orders never merges two charges.
        idempotencyKey: `${order.orderId}:${key}`,
      },
      AbortSignal.timeout(timeoutMs),
    );
  } catch (err) {
    // The outcome is unknown: the claim stays, so no other key charges meanwhile.
    if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError")) return { kind: "timed_out" };
    throw err;
  }
  if (result.outcome === "declined") {
    await finishAttempt(db, order.orderId, key, { status: "declined", declineReason: result.reason });
    return { kind: "declined", reason: result.reason };
  }
  const landing = await markPaid(db, order.orderId, `attempt:${key}`, key);
  if (landing.paid) {
    await finishAttempt(db, order.orderId, key, { status: "succeeded", providerRef: result.providerRef });
    return { kind: "paid" };
  }
  await markRefundDue(db, order.orderId);
  await finishAttempt(db, order.orderId, key, { status: "refund_due", providerRef: result.providerRef });
  return { kind: "not_payable", reason: refundReason(landing.status) };
}

export type EventOutcome = "paid" | "refund_due" | "ignored" | "duplicate";

/**
 * Applies a verified payment event once: its id is recorded first, and a replay changes
 * nothing. A success pays the order if it still awaits payment with its window open, no
 * payment attempt holds its claim, and the amount matches; a success for an order that ended
 * (or was paid otherwise, or for another amount) is recorded for refund; a failure changes
 * nothing (the order waits for its expiry). An event that reports the very charge the pay
 * route already recorded (its `paymentRef`, a provider that confirms synchronous charges by
 * webhook too) is that charge's outcome again, never a second charge to refund. While a pay
 * attempt holds the order's claim, a success is not applied (in progress): the provider
 * delivers it again, and it is decided once that attempt has ended, as the charge it reports
 * (paid by that attempt) or as another one.
 */
export async function applyPaymentEvent(
  db: D1Database,
  event: PaymentEvent,
  order: OrderRecord,
  timeoutMs: number,
): Promise<EventOutcome | PaymentInProgress> {
  const [, recorded] = await db.batch<{ applied: number; outcome: EventOutcome | null }>([
    db
      .prepare(
        `INSERT INTO payment_events (event_id, order_id, type, received_at) VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT DO NOTHING`,
      )
      .bind(event.id, event.orderId, event.type, Date.now()),
    db.prepare("SELECT applied, outcome FROM payment_events WHERE event_id = ?").bind(event.id),
  ]);
  const row = recorded?.results[0];
  if (row?.applied === 1) return "duplicate";

  let outcome: EventOutcome = "ignored";
  if (event.type === "payment.succeeded") {
    const matches = event.amount === order.amount && event.currency === order.currency;
    const known = event.paymentRef === undefined ? undefined : await attemptOfCharge(db, order.orderId, event.paymentRef);
    const landing = known || !matches ? undefined : await markPaid(db, order.orderId, `event:${event.id}`, null);
    if (landing?.paid === false && landing.heldBy) return inProgress(landing.heldBy, timeoutMs);
    if (known === "succeeded" || landing?.paid) outcome = "paid";
    else if (known === "refund_due") outcome = "refund_due";
    else {
      await markRefundDue(db, order.orderId);
      outcome = "refund_due";
    }
  }
  await db.prepare("UPDATE payment_events SET applied = 1, outcome = ? WHERE event_id = ?").bind(outcome, event.id).run();
  return outcome;
}
