// Why a checkout was turned away: one vocabulary for the reservation script's replies, the
// isolate memo's local refusals, the lab's strategies and the API's error codes.

/** The sale's admission token bucket: refill per second and capacity. */
export interface Admission {
  rate: number;
  burst: number;
}

export type Refusal =
  /**
   * `variant`: the variant asked for is (a sale with variants); absent: the whole sale is.
   * `inLane`: only the presale lane open now has none left (a later lane or the public may).
   * `quiet`: a quiet place's pass (src/admission/gate.ts losesQuietly), told what a person is
   * when the units are gone, whatever is left.
   */
  | { code: "SOLD_OUT"; variant?: string; inLane?: true; quiet?: true }
  /** Fewer units remain (of `variant`, if named; in the lane open now, if `inLane`) than were asked for, but some do. */
  | { code: "QUANTITY_UNAVAILABLE"; remaining: number; variant?: string; inLane?: true }
  /** The sale has variants and the checkout named none. */
  | { code: "VARIANT_REQUIRED" }
  /** The sale has no variant of this id. */
  | { code: "VARIANT_NOT_FOUND"; variant: string }
  /**
   * The buyer holds the most units the sale allows. `orderId` names their latest order,
   * where the refuser knows it (the lab's copies do not).
   */
  | { code: "ALREADY_PURCHASED"; orderId?: string }
  /** The buyer holds some units, and the quantity asked for would take them past the limit. */
  | { code: "PER_USER_LIMIT_EXCEEDED"; held: number; limit: number }
  | { code: "SALE_NOT_STARTED"; startsAt: number }
  | { code: "SALE_ENDED"; endsAt: number }
  | { code: "SALE_PAUSED" }
  | { code: "SALE_CANCELLED" }
  | { code: "SALE_NOT_FOUND" }
  | { code: "RATE_LIMITED"; retryAfterMs: number; admission: Admission }
  /** The buyer's Idempotency-Key already reserved an order, for another quantity. */
  | { code: "IDEMPOTENCY_KEY_REUSED" }
  /** The sale asks for the human check and the request carried no Human-Check token. */
  | { code: "HUMAN_CHECK_REQUIRED" }
  /** The Human-Check token did not pass (or a deny rule matched a caller of such a sale). */
  | { code: "HUMAN_CHECK_FAILED" }
  /** The lab only: a strategy gave up under contention (lock not taken, CAS retries spent). */
  | { code: "BUSY" }
  /** A queued sale: no Queue-Pass was sent. */
  | { code: "QUEUE_PASS_REQUIRED" }
  /** A queued sale: the pass is forged, another buyer's or another sale's, or not admitted. */
  | { code: "QUEUE_PASS_INVALID" }
  /** A queued sale: the pass bought once already. */
  | { code: "QUEUE_PASS_USED" }
  /** A queued sale: the pass's time to check out ran out (the next place was let in). */
  | { code: "QUEUE_PASS_EXPIRED" }
  /** A sale sold by draw: only its draw's offers reserve (docs/draws.md). */
  | { code: "DRAW_ONLY" }
  /** A presale lane is open and no access code came; codes are not asked for from `publicStartsAt` (docs/lanes.md). */
  | { code: "ACCESS_CODE_REQUIRED"; publicStartsAt: number }
  /** The code is unknown, revoked, expired, of a lane not open yet, or bound to another buyer. */
  | { code: "ACCESS_CODE_INVALID" }
  /** The code's uses are spent. */
  | { code: "ACCESS_CODE_USED" };

export type RefusalCode = Refusal["code"];

/**
 * What the console's outcome counters count besides the refusals: DENIED, a caller a deny
 * rule matched (answered with a refusal a person could get, and counted here instead).
 */
export type CountedOutcome = RefusalCode | "DENIED";
