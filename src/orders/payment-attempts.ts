// D1's payments table: one pay attempt per (order, Idempotency-Key), so a retry with the same
// key is answered from what happened the first time, and the same key with another body is
// told so.

export type AttemptStatus = "charging" | "succeeded" | "declined" | "refund_due";

export interface PayAttempt {
  fingerprint: string;
  status: AttemptStatus;
  /** The provider's words when it declined (null on attempts recorded before they were kept). */
  declineReason: string | null;
}

const selectAttempt = (db: D1Database, orderId: string, key: string) =>
  db
    .prepare(
      "SELECT fingerprint, status, decline_reason AS declineReason FROM payments WHERE order_id = ? AND idempotency_key = ?",
    )
    .bind(orderId, key);

/** The attempt recorded for (order, key), if any. */
export async function findAttempt(db: D1Database, orderId: string, key: string): Promise<PayAttempt | undefined> {
  return (await selectAttempt(db, orderId, key).first<PayAttempt>()) ?? undefined;
}

/**
 * The attempt for (order, key): the one recorded before, or a new one recorded now as
 * charging with this fingerprint (one batch: one D1 round trip).
 */
export async function claimAttempt(db: D1Database, orderId: string, key: string, fingerprint: string): Promise<PayAttempt> {
  const now = Date.now();
  const [, select] = await db.batch<PayAttempt>([
    db
      .prepare(
        `INSERT INTO payments (order_id, idempotency_key, fingerprint, status, created_at, updated_at)
         VALUES (?1, ?2, ?3, 'charging', ?4, ?4) ON CONFLICT DO NOTHING`,
      )
      .bind(orderId, key, fingerprint, now),
    selectAttempt(db, orderId, key),
  ]);
  return select?.results[0] as PayAttempt;
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

export async function finishAttempt(db: D1Database, orderId: string, key: string, end: AttemptEnd): Promise<void> {
  const providerRef = end.status === "declined" ? null : end.providerRef;
  const declineReason = end.status === "declined" ? end.declineReason : null;
  await db
    .prepare(
      `UPDATE payments SET status = ?3, provider_ref = ?4, decline_reason = ?5, updated_at = ?6
       WHERE order_id = ?1 AND idempotency_key = ?2`,
    )
    .bind(orderId, key, end.status, providerRef, declineReason, Date.now())
    .run();
}
