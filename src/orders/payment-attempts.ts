// D1's payments table: one pay attempt per (order, Idempotency-Key), so a retry with the same
// key is answered from what happened the first time, and the same key with another body is
// told so.

export type AttemptStatus = "charging" | "succeeded" | "declined" | "refund_due";

export interface PayAttempt {
  fingerprint: string;
  status: AttemptStatus;
}

/** The attempt recorded for (order, key), if any. */
export async function findAttempt(db: D1Database, orderId: string, key: string): Promise<PayAttempt | undefined> {
  const row = await db
    .prepare("SELECT fingerprint, status FROM payments WHERE order_id = ? AND idempotency_key = ?")
    .bind(orderId, key)
    .first<PayAttempt>();
  return row ?? undefined;
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
    db.prepare("SELECT fingerprint, status FROM payments WHERE order_id = ? AND idempotency_key = ?").bind(orderId, key),
  ]);
  return select?.results[0] as PayAttempt;
}

export async function finishAttempt(
  db: D1Database,
  orderId: string,
  key: string,
  status: Exclude<AttemptStatus, "charging">,
  providerRef?: string,
): Promise<void> {
  await db
    .prepare("UPDATE payments SET status = ?3, provider_ref = ?4, updated_at = ?5 WHERE order_id = ?1 AND idempotency_key = ?2")
    .bind(orderId, key, status, providerRef ?? null, Date.now())
    .run();
}
