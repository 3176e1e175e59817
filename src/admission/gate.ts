// The admission checks in front of a sale's stock, in order: deny rules, then the human check
// where the sale asks for it. Checkout of an unqueued sale runs them now; the queue join is
// to run the same. None of them costs a Redis command.
import type { KeepAlive } from "../isolate/shared-work";
import type { CountedOutcome, Refusal } from "../shared/refusal";
import { type Caller, isDenied } from "./deny-rules";
import { checkHuman, type HumanCheckSettings } from "./human-check";
import { salePolicy } from "./sale-policy";

export interface AdmissionRequest {
  saleId: string;
  caller: Caller;
  /** The Human-Check header. */
  humanCheckToken: string | undefined;
  /** The request's waitUntil: D1 reads shared inside the isolate are kept alive by it. */
  keepAlive: KeepAlive;
}

/** Turned away: what the caller is answered, and what the console counts. */
export interface AdmissionRefusal {
  refusal: Refusal;
  counted: CountedOutcome;
}

/**
 * Undefined when the caller may go on to the sale's stock. A denied caller is not told so
 * ("bots lose quietly"): it gets what a person could get, HUMAN_CHECK_FAILED where the sale
 * asks for the check, SOLD_OUT otherwise, and is counted as DENIED. Throws when D1 cannot
 * say whether the sale asks for the check, or siteverify cannot be asked (HumanCheckUnavailable).
 */
export async function admissionRefusal(
  db: D1Database,
  request: AdmissionRequest,
  settings: HumanCheckSettings,
): Promise<AdmissionRefusal | undefined> {
  const [policy, denied] = await Promise.all([
    salePolicy(db, request.saleId, request.keepAlive),
    isDenied(db, request.caller, request.keepAlive),
  ]);
  if (denied) return { refusal: policy?.humanCheck ? { code: "HUMAN_CHECK_FAILED" } : { code: "SOLD_OUT" }, counted: "DENIED" };
  if (!policy?.humanCheck) return undefined;
  const refusal = await checkHuman(request.humanCheckToken, request.saleId, request.caller.ip, settings);
  return refusal && { refusal, counted: refusal.code };
}
