// D1's payments table: one pay attempt per (order, Idempotency-Key), so a retry with the same
// key is answered from what happened the first time, and the same key with another body is
// told so. An attempt is recorded, and the provider called, only under the order's payment
// claim (payment-claim.ts): one attempt in flight per order.
import { NOW_MS } from "./d1-clock";
import { claimHeldByAnother, type HeldClaim, type OrderClaimRow, selectOrderClaim } from "./payment-claim";

export type AttemptStatus = "charging" | "succeeded" | "declined" | "refund_due";

export interface PayAttempt {
  fingerprint: string;
  status: AttemptStatus;
  /** The provider's words when it declined (null on attempts recorded before they were kept). */
  declineReason: string | null;
}

/** What an attempt met when it claimed its order. */
export interface ClaimResult {
  /** The attempt of (order, key): recorded before, or now as charging because this one holds the claim. */
  attempt: PayAttempt | undefined;
  /** The order's state after the claim (undefined: not in the orders table, e.g. failed). */
  status: OrderClaimRow["status"] | undefined;
  /** Another key's claim, when that is what kept this attempt out. */
  heldByAnother: HeldClaim | undefined;
}

const selectAttempt = (db: D1Database, orderId: string, key: string) =>
  db
    .prepare(
      "SELECT fingerprint, status, decline_reason AS declineReason FROM payments WHERE order_id = ? AND idempotency_key = ?",
    )
    .bind(orderId, key);

/**
 * Claims the order for (order, key) before the provider is called, in one batch (one
 * transaction, one round trip). The claim is taken, or kept, by one conditional UPDATE: the
 * order awaits payment with its window open by D1's clock, no other key holds it, and this
 * key's attempt, if any, is still charging with this body (a finished attempt is answered
 * from its record, never charged again). An attempt is recorded as charging only under the
 * claim. A retry of the key that holds the claim takes it again: its outcome is learnt from
 * the provider, which answers from its first charge.
 */
export async function claimOrder(db: D1Database, orderId: string, key: string, fingerprint: string): Promise<ClaimResult> {
  const now = Date.now();
  const [, , attempt, order] = await db.batch<PayAttempt | OrderClaimRow>([
    db
      .prepare(
        `UPDATE orders SET payment_claim = ?2, payment_claimed_at = ${NOW_MS}
         WHERE order_id = ?1 AND status = 'awaiting_payment' AND expires_at > ${NOW_MS}
           AND (payment_claim IS NULL OR payment_claim = ?2)
           AND NOT EXISTS (SELECT 1 FROM payments WHERE order_id = ?1 AND idempotency_key = ?2
                           AND (status != 'charging' OR fingerprint != ?3))`,
      )
      .bind(orderId, key, fingerprint),
    db
      .prepare(
        `INSERT INTO payments (order_id, idempotency_key, fingerprint, status, created_at, updated_at)
         SELECT ?1, ?2, ?3, 'charging', ?4, ?4 WHERE EXISTS (SELECT 1 FROM orders WHERE order_id = ?1 AND payment_claim = ?2)
         ON CONFLICT DO NOTHING`,
      )
      .bind(orderId, key, fingerprint, now),
    selectAttempt(db, orderId, key),
    selectOrderClaim(db, orderId),
  ]);
  const row = order?.results[0] as OrderClaimRow | undefined;
  return {
    attempt: attempt?.results[0] as PayAttempt | undefined,
    status: row?.status,
    heldByAnother: claimHeldByAnother(row, key),
  };
}

/** How the pay route's attempt that charged `providerRef` on this order ended, if one did. */
export async function attemptOfCharge(
  db: D1Database,
  orderId: string,
  providerRef: string,
): Promise<"succeeded" | "refund_due" | undefined> {
  const row = await db
    .prepare("SELECT status FROM payments WHERE order_id = ? AND provider_ref = ? AND status IN ('succeeded', 'refund_due')")
    .bind(orderId, providerRef)
    .first<{ status: "succeeded" | "refund_due" }>();
  return row?.status;
}

/** How an attempt ended: the provider's reference for a charge, its reason for a decline. */
export type AttemptEnd =
  | { status: "succeeded" | "refund_due"; providerRef: string }
  | { status: "declined"; declineReason: string };

/** Records how the attempt ended and releases its claim (one batch): the next attempt may go. */
export async function finishAttempt(db: D1Database, orderId: string, key: string, end: AttemptEnd): Promise<void> {
  const providerRef = end.status === "declined" ? null : end.providerRef;
  const declineReason = end.status === "declined" ? end.declineReason : null;
  await db.batch([
    db
      .prepare(
        `UPDATE payments SET status = ?3, provider_ref = ?4, decline_reason = ?5, updated_at = ?6
         WHERE order_id = ?1 AND idempotency_key = ?2`,
      )
      .bind(orderId, key, end.status, providerRef, declineReason, Date.now()),
    db
      .prepare("UPDATE orders SET payment_claim = NULL, payment_claimed_at = NULL WHERE order_id = ?1 AND payment_claim = ?2")
      .bind(orderId, key),
  ]);
}
