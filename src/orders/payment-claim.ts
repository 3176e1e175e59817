// The order's payment claim (orders.payment_claim): one payment attempt in flight per order.
// Providers deduplicate by idempotency key only, so two attempts with two keys would be two
// charges. Before the provider is called an attempt claims its order (payment-attempts.ts),
// and while it holds the claim neither another key nor a webhook can pay the order.
import type { OrderStatus } from "../shared/api-types";
import { NOW_MS } from "./d1-clock";

/** A claim another attempt holds on an order still awaiting payment, by D1's clock. */
export interface HeldClaim {
  /** When the attempt holding it last called the provider. */
  claimedAt: number;
  /** When the order's payment window closes: after that the claim holds nothing back. */
  expiresAt: number;
  now: number;
}

export interface OrderClaimRow {
  status: Exclude<OrderStatus, "pending" | "failed">;
  paid_ref: string | null;
  payment_claim: string | null;
  payment_claimed_at: number | null;
  expires_at: number | null;
  /** 1 while the order awaits payment with its window open. */
  open: number;
  now: number;
}

/** The order's claim as it stands, read inside a batch so that it agrees with the batch's writes. */
export const selectOrderClaim = (db: D1Database, orderId: string) =>
  db
    .prepare(
      `SELECT status, paid_ref, payment_claim, payment_claimed_at, expires_at,
              status = 'awaiting_payment' AND expires_at > ${NOW_MS} AS open, ${NOW_MS} AS now
       FROM orders WHERE order_id = ?`,
    )
    .bind(orderId);

/** The claim `row` shows held by anyone but `holder` (null: nobody) on an order still payable; undefined when none. */
export function claimHeldByAnother(row: OrderClaimRow | undefined, holder: string | null): HeldClaim | undefined {
  if (row?.open !== 1 || row.payment_claim === null || row.payment_claim === holder) return undefined;
  return { claimedAt: row.payment_claimed_at ?? row.now, expiresAt: row.expires_at ?? row.now, now: row.now };
}
