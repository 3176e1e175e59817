// lua/checkout.lua's reply, read: the one layout the script writes and the Worker, its tests and the
// benches read (the script's header says what each field holds).
import { DEFAULT_VARIANT } from "./limits";
import type { Admission, Refusal } from "./refusal";

/** What lua/checkout.lua decided for one buyer. */
export type Reservation =
  | {
      code: "OK";
      orderId: string;
      remaining: number;
      reservedAt: number;
      admission: Admission;
      held: number;
      limit: number;
      /** Reserved by an earlier attempt with the same Idempotency-Key: nothing new was reserved. */
      repeated: boolean;
      /** The sale's order sequence after the call (ids it minted ever); the call's new orders hold the last numbers. */
      sequence: number;
      /** The presale lane it was bought in (its units count against that lane's allotment); absent: the public sale. */
      lane?: string;
    }
  | Refusal;

/** The layout this Worker reads; lua/checkout.lua names the one it writes in its first field. */
const CHECKOUT_REPLY_LAYOUT = "checkout/5";
const HEADER_FIELDS = 12;
const FIELDS_PER_BUYER = 4;

/** The script and this Worker disagree on the reply: a deploy of mismatched versions. */
export class ReplyLayoutError extends Error {
  override name = "ReplyLayoutError";
}

/**
 * What one call decided: a reservation per buyer, or, when the call was split by another
 * bucket count than the sale's (an isolate behind on an edit just before the start), nothing
 * done and the sale's count to split by.
 */
export type CheckoutReply = { reservations: Reservation[] } | { reservations: null; buckets: number };

/**
 * Reads the script's one flat reply (header, then four fields per buyer; see the header of
 * lua/checkout.lua) into one reservation per buyer. A reply in another layout or of the
 * wrong length means the script and this Worker disagree: fail loudly, never guess.
 * `variants`: what each buyer named, for the refusals that name it back.
 */
export function parseCheckoutReply(reply: unknown, buyers: number, variants: (string | undefined)[] = []): CheckoutReply {
  const expected = HEADER_FIELDS + FIELDS_PER_BUYER * buyers;
  if (!Array.isArray(reply) || reply[0] !== CHECKOUT_REPLY_LAYOUT || reply.length !== expected) {
    const layout = Array.isArray(reply) ? `${String(reply[0])} with ${reply.length} fields` : typeof reply;
    throw new ReplyLayoutError(
      `lua/checkout.lua replied in layout ${layout}; this Worker reads ${CHECKOUT_REPLY_LAYOUT} with ${expected} fields`,
    );
  }
  const [, nowMs, startsAt, endsAt, rate, burst, retryAfterMs, limit, sequence, buckets, publicStartsAt] = reply
    .slice(0, HEADER_FIELDS - 1)
    .map(Number) as number[];
  const lane = String(reply[HEADER_FIELDS - 1]) || undefined;
  if (reply[HEADER_FIELDS] === "BUCKETS_CHANGED") return { reservations: null, buckets: buckets as number };
  const admission: Admission = { rate: rate as number, burst: burst as number };
  const reservations: Reservation[] = [];
  for (let i = HEADER_FIELDS; i < reply.length; i += FIELDS_PER_BUYER) {
    const code = String(reply[i]);
    const orderId = String(reply[i + 1]);
    const remaining = Number(reply[i + 2]);
    const held = Number(reply[i + 3]);
    // The variant this buyer named, for refusals about it; a sale without variants names none (or "default").
    const named = variants[(i - HEADER_FIELDS) / FIELDS_PER_BUYER];
    const variant = named === DEFAULT_VARIANT ? undefined : named;
    switch (code) {
      case "OK":
      case "REPEATED":
        reservations.push({
          code: "OK",
          orderId,
          remaining,
          reservedAt: nowMs as number,
          admission,
          held,
          limit: limit as number,
          repeated: code === "REPEATED",
          sequence: sequence as number,
          ...(lane !== undefined && code === "OK" && { lane }),
        });
        break;
      case "KEY_REUSED":
        reservations.push({ code: "IDEMPOTENCY_KEY_REUSED" });
        break;
      case "ALREADY_PURCHASED":
        reservations.push({ code, orderId });
        break;
      case "PER_USER_LIMIT_EXCEEDED":
        reservations.push({ code, held, limit: limit as number });
        break;
      case "QUANTITY_UNAVAILABLE":
        reservations.push({ code, remaining, variant });
        break;
      case "SOLD_OUT":
        reservations.push({ code, variant });
        break;
      case "LANE_SOLD_OUT":
        reservations.push({ code: "SOLD_OUT", variant, inLane: true });
        break;
      case "QUIET_PASS":
        reservations.push({ code: "SOLD_OUT", variant, quiet: true });
        break;
      case "LANE_QUANTITY_UNAVAILABLE":
        reservations.push({ code: "QUANTITY_UNAVAILABLE", remaining, variant, inLane: true });
        break;
      case "ACCESS_CODE_REQUIRED":
        reservations.push({ code, publicStartsAt: publicStartsAt as number });
        break;
      case "VARIANT_NOT_FOUND":
        reservations.push({ code, variant: named ?? "" });
        break;
      case "VARIANT_REQUIRED":
      case "SALE_PAUSED":
      case "SALE_CANCELLED":
      case "SALE_NOT_FOUND":
      case "QUEUE_PASS_REQUIRED":
      case "QUEUE_PASS_INVALID":
      case "QUEUE_PASS_USED":
      case "QUEUE_PASS_EXPIRED":
      case "DRAW_ONLY":
      case "ACCESS_CODE_INVALID":
      case "ACCESS_CODE_USED":
        reservations.push({ code });
        break;
      case "RATE_LIMITED":
        reservations.push({ code, retryAfterMs: retryAfterMs as number, admission });
        break;
      case "SALE_NOT_STARTED":
        reservations.push({ code, startsAt: startsAt as number });
        break;
      case "SALE_ENDED":
        reservations.push({ code, endsAt: endsAt as number });
        break;
      default:
        throw new ReplyLayoutError(`lua/checkout.lua replied with outcome ${code}, which this Worker does not know`);
    }
  }
  return { reservations };
}
