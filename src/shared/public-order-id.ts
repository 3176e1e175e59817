// The order ids people see. An internal id (src/shared/order-id.ts) carries the millisecond it
// was minted in, the sale's slot and its index in that millisecond: what Redis, the queues and
// D1 need, and what a buyer must not learn (when orders are made, how many, a neighbour's id).
// Everywhere outside the system (API answers, the console, the CSV, order events) an order goes
// by its public id: a keyed permutation of the internal one, FF1 (NIST SP 800-38G, the standard
// format-preserving cipher: AES-256 in a ten-round Feistel network) over its 63 bits, keyed with
// ORDER_ID_KEY, plus 2^63. So:
// - a public id is a decimal string from 2^63 to 2^64 - 1 (19 or 20 digits; it fits an
//   unsigned 64-bit integer), and an internal one is below 2^63: an id a client kept from
//   before public ids still resolves, and nothing else could be read as one;
// - the same order always has the same public id (a retried checkout answers the one it got),
//   and without the key neither time, slot nor sequence can be read from it, nor a neighbour's
//   id guessed;
// - the key can never change: every public id handed out would then name another order.
// FF1 as NIST specifies it (src/shared/ff1.ts, over Web Crypto's AES) rather than a Feistel
// network of this project's own: a standard cipher, held to NIST's sample vectors.
import { type FF1, ff1 } from "./ff1";

/** Public ids start here; below are internal ids, kept working for clients that hold them. */
export const PUBLIC_ORDER_ID_FLOOR = 1n << 63n;
const ID_BITS = 63n;
/** FF1 works on digits: 63 bits as 7 digits of 9 bits (the fastest split of 63 bits measured). */
const DIGIT_BITS = 9n;
const DIGITS = Number(ID_BITS / DIGIT_BITS);
export const ORDER_ID_RADIX = 1 << Number(DIGIT_BITS);

/** ORDER_ID_KEY as settings.ts accepts it: 64 hex digits, an AES-256 key. */
export const ORDER_ID_KEY_PATTERN = /^[0-9a-fA-F]{64}$/;

export interface OrderIdCipher {
  /** The public id of an internal one (below 2^63). */
  toPublic(internalId: string): Promise<string>;
  /** The internal id an id a client sent names: a public id deciphered, an internal one as it is. */
  toInternal(orderId: string): Promise<string>;
}

const digitsOf = (n: bigint): number[] =>
  Array.from({ length: DIGITS }, (_, i) => Number((n >> (BigInt(DIGITS - 1 - i) * DIGIT_BITS)) & BigInt(ORDER_ID_RADIX - 1)));
const numberOf = (digits: number[]): bigint => digits.reduce((n, d) => (n << DIGIT_BITS) | BigInt(d), 0n);

export const isPublicOrderId = (orderId: string): boolean => BigInt(orderId) >= PUBLIC_ORDER_ID_FLOOR;

/** The digits FF1 enciphers into a public id: an internal id's 63 bits. */
export function internalDigits(internalId: string): number[] {
  if (isPublicOrderId(internalId)) throw new Error(`${internalId} is a public order id already`);
  return digitsOf(BigInt(internalId));
}
/** The public id of enciphered digits. */
export const publicIdOf = (enciphered: number[]): string => String(PUBLIC_ORDER_ID_FLOOR + numberOf(enciphered));
/** The enciphered digits a public id carries. */
export const publicDigits = (publicId: string): number[] => digitsOf(BigInt(publicId) - PUBLIC_ORDER_ID_FLOOR);
/** The internal id of deciphered digits. */
export const internalIdOf = (digits: number[]): string => String(numberOf(digits));

/** ORDER_ID_KEY's bytes: an AES-256 key. */
export function orderIdKeyBytes(keyHex: string): Uint8Array<ArrayBuffer> {
  if (!ORDER_ID_KEY_PATTERN.test(keyHex)) throw new Error("an order id key is 64 hex digits");
  return Uint8Array.from(keyHex.match(/../g) as string[], (pair) => Number.parseInt(pair, 16));
}

/** The cipher of public ids over a keyed FF1 over ORDER_ID_RADIX. */
function cipherOf(cipher: FF1): OrderIdCipher {
  return {
    toPublic: async (internalId) => publicIdOf(await cipher.encrypt(internalDigits(internalId))),
    toInternal: async (orderId) =>
      isPublicOrderId(orderId) ? internalIdOf(await cipher.decrypt(publicDigits(orderId))) : orderId,
  };
}

let cached: { key: string; cipher: OrderIdCipher } | undefined;

/** The cipher of `keyHex` (ORDER_ID_KEY), made once per isolate: its AES key is imported once. */
export function orderIdCipher(keyHex: string): OrderIdCipher {
  if (cached?.key !== keyHex) cached = { key: keyHex, cipher: cipherOf(ff1(ORDER_ID_RADIX, orderIdKeyBytes(keyHex))) };
  return cached.cipher;
}

/**
 * Crockford's base32: no I, L, O or U, so it reads out on the phone without doubt. Five bits at
 * a time of a number, by hand: base32 libraries encode byte arrays.
 */
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const REFERENCE_CHARACTERS = 8;

/**
 * A short reference for people, "7KQ4-M2XD": the public id's low 40 bits in Crockford's base32.
 * Not unique on its own (two orders of a sale share one with a chance of about n^2 / 2^41 for n
 * orders); a sale's list finds an order by it, and the id stays the order's name.
 */
export function orderReference(publicId: string): string {
  let n = BigInt(publicId);
  let text = "";
  for (let i = 0; i < REFERENCE_CHARACTERS; i++, n >>= 5n) text = CROCKFORD[Number(n & 31n)] + text;
  return `${text.slice(0, 4)}-${text.slice(4)}`;
}
