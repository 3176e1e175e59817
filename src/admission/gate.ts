// The admission checks in front of a sale's stock, in order: deny rules, then the human check
// where the sale asks for it. A queued sale runs them at the queue join (its pass then carries
// them to checkout); an unqueued sale at checkout. None of them costs a Redis command.
import type { KeepAlive } from "../isolate/shared-work";
import { bucketSplitOf, heldSale, knownSale } from "../sales/known-sales";
import type { Sale } from "../sales/sale";
import type { BucketSplit } from "../shared/keys";
import type { CountedOutcome, Refusal } from "../shared/refusal";
import { Unavailable } from "../shared/unavailable";
import { type Caller, deniedByHeldRules, isDenied } from "./deny-rules";
import { checkHuman, type HumanCheckSettings, HumanCheckUnavailable } from "./human-check";

export interface AdmissionRequest {
  saleId: string;
  caller: Caller;
  /** The Human-Check header. */
  humanCheckToken: string | undefined;
  /** The request's waitUntil: D1 reads shared inside the isolate are kept alive by it. */
  keepAlive: KeepAlive;
  /** Where the checks run: joining the sale's queue, or checking out. */
  stage: "queue-join" | "draw-entry" | "checkout";
}

/** Turned away: what the caller is answered, and what the console counts. */
export interface AdmissionRefusal {
  refusal: Refusal;
  counted: CountedOutcome;
}

/** D1 or siteverify cannot be asked: neither admitted nor refused (the routes answer 503 with the message). */
export class AdmissionUnavailable extends Unavailable {}

/** Whether the sale asks for the human check at `stage`: a queued sale asks at the join, and its pass carries the check. */
const asksHumanAt = (sale: Pick<Sale, "humanCheck" | "queue"> | undefined, stage: AdmissionRequest["stage"]) =>
  !!sale?.humanCheck && (stage === "queue-join" || sale.queue.mode === "off");

/**
 * The sale as this isolate knows it (undefined when D1 has no such sale), and `turnedAway`
 * unless the caller may go on to its stock (or its line). A denied caller is not told so
 * ("bots lose quietly"): it gets what a person could get, HUMAN_CHECK_FAILED where the check
 * is asked, SOLD_OUT otherwise, and is counted as DENIED. Throws AdmissionUnavailable when D1
 * cannot say whether the sale asks for the check, or siteverify cannot be asked.
 */
export async function checkAdmission(
  db: D1Database,
  request: AdmissionRequest,
  settings: HumanCheckSettings,
): Promise<{ sale: Sale | undefined; turnedAway?: AdmissionRefusal }> {
  try {
    const [sale, denied] = await Promise.all([
      knownSale(db, request.saleId, request.keepAlive),
      isDenied(db, request.caller, request.keepAlive),
    ]);
    const asksHuman = asksHumanAt(sale, request.stage);
    // A denied caller's token is judged like anyone's, so its answer takes no less time.
    const refusal = asksHuman
      ? await checkHuman(request.humanCheckToken, request.saleId, request.caller.address?.ip, settings)
      : undefined;
    if (denied) {
      return {
        sale,
        turnedAway: { refusal: asksHuman ? { code: "HUMAN_CHECK_FAILED" } : { code: "SOLD_OUT" }, counted: "DENIED" },
      };
    }
    return { sale, turnedAway: refusal && { refusal, counted: refusal.code } };
  } catch (err) {
    const what = err instanceof HumanCheckUnavailable ? "the human check" : "the sale";
    throw new AdmissionUnavailable(`${what} cannot be reached right now; try again shortly`, { cause: err });
  }
}

/**
 * The common case decided in step, with no promise: the isolate holds the sale's record and
 * fresh deny rules, no rule matches, and the sale asks no human check at checkout. Then the
 * caller goes on to the sale's stock, split into the returned bucket count (one for a sale D1
 * does not hold: Redis answers SALE_NOT_FOUND whatever the count). Undefined for anything
 * else: checkAdmission decides (reading D1 or siteverify where it must).
 */
export function admittedAtCheckout(
  saleId: string,
  caller: Caller,
  now = Date.now(),
): { buckets: BucketSplit; sale: Sale | null } | undefined {
  const sale = heldSale(saleId);
  if (sale === undefined || asksHumanAt(sale ?? undefined, "checkout")) return undefined;
  return deniedByHeldRules(caller, now) === false ? { buckets: bucketSplitOf(sale), sale } : undefined;
}

/**
 * Whether a caller turned away at the queue join loses quietly (a deny rule matched, or its
 * token did not pass: it is given a ticket whose pass buys nothing), rather than being
 * asked openly for the token it did not send.
 */
export const losesQuietly = (turnedAway: AdmissionRefusal) => turnedAway.refusal.code !== "HUMAN_CHECK_REQUIRED";
