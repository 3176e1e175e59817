// An order's states, on their own: a module that needs their names as values (the order
// lists' status filter) imports this, not api-types.ts, whose response schemas the Worker
// would then build at start-up only for their types.

/**
 * pending (reserved, not in D1 yet) -> awaiting_payment (settled, until expiresAt) -> paid |
 * expired | cancelled; or confirmed when the sale has no payment step; failed when it could
 * never settle (its units went back on sale).
 */
export const ORDER_STATUSES = ["pending", "awaiting_payment", "paid", "expired", "cancelled", "confirmed", "failed"] as const;
