// Why a checkout was turned away: one vocabulary for the reservation script's replies, the
// isolate memo's local refusals, the lab's strategies and the API's error codes.

/** The sale's admission token bucket: refill per second and capacity. */
export interface Admission {
  rate: number;
  burst: number;
}

export type Refusal =
  | { code: "SOLD_OUT" }
  /** `orderId` names the order the buyer holds, where the refuser knows it (the lab's copies do not). */
  | { code: "ALREADY_PURCHASED"; orderId?: string }
  | { code: "SALE_NOT_STARTED"; startsAt: number }
  | { code: "SALE_ENDED"; endsAt: number }
  | { code: "SALE_NOT_FOUND" }
  | { code: "RATE_LIMITED"; retryAfterMs: number; admission: Admission }
  /** The lab only: a strategy gave up under contention (lock not taken, CAS retries spent). */
  | { code: "BUSY" };

export type RefusalCode = Refusal["code"];
