import type { Admission, Refusal } from "../shared/refusal";

/** What lua/checkout.lua decided for one buyer. */
export type Reservation = { code: "OK"; orderId: string; remaining: number; reservedAt: number; admission: Admission } | Refusal;

/** The layout this Worker reads; lua/checkout.lua names the one it writes in its first field. */
export const CHECKOUT_REPLY_LAYOUT = "checkout/1";
const HEADER_FIELDS = 7;
const FIELDS_PER_USER = 3;

export class ReplyLayoutError extends Error {}

/**
 * Reads the script's one flat reply (header, then three fields per user; see the header
 * of lua/checkout.lua) into one reservation per user. A reply in another layout or of the
 * wrong length means the script and this Worker disagree: fail loudly, never guess.
 */
export function parseCheckoutReply(reply: unknown, users: number): Reservation[] {
  if (!Array.isArray(reply) || reply[0] !== CHECKOUT_REPLY_LAYOUT || reply.length !== HEADER_FIELDS + FIELDS_PER_USER * users) {
    const layout = Array.isArray(reply) ? `${String(reply[0])} with ${reply.length} fields` : typeof reply;
    throw new ReplyLayoutError(
      `lua/checkout.lua replied in layout ${layout}; this Worker reads ${CHECKOUT_REPLY_LAYOUT} with ${HEADER_FIELDS + FIELDS_PER_USER * users} fields`,
    );
  }
  const [, nowMs, startsAt, endsAt, rate, burst, retryAfterMs] = reply.slice(0, HEADER_FIELDS).map(Number) as number[];
  const admission: Admission = { rate: rate as number, burst: burst as number };
  const reservations: Reservation[] = [];
  for (let i = HEADER_FIELDS; i < reply.length; i += FIELDS_PER_USER) {
    const code = String(reply[i]);
    const orderId = String(reply[i + 1]);
    switch (code) {
      case "OK":
        reservations.push({ code, orderId, remaining: Number(reply[i + 2]), reservedAt: nowMs as number, admission });
        break;
      case "ALREADY_PURCHASED":
        reservations.push({ code, orderId });
        break;
      case "SOLD_OUT":
      case "SALE_NOT_FOUND":
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
  return reservations;
}
