// The public order ids of a stack, for the tools and tests that compare what buyers were given
// with what D1 and Redis keep: the Worker's cipher (src/shared/public-order-id.ts), with
// @noble/ciphers' FF1 in place of the Worker's over Web Crypto (the same ids, held to each other
// by test/node/ff1.test.ts), so the tools get them at once, not as promises.
import { FF1 } from "@noble/ciphers/ff1.js";
import {
  internalDigits,
  internalIdOf,
  isPublicOrderId,
  ORDER_ID_RADIX,
  orderIdKeyBytes,
  publicDigits,
  publicIdOf,
} from "../../src/shared/public-order-id.ts";

export interface OrderIds {
  /** The public id of an internal one. */
  toPublic(internalId: string): string;
  /** The internal id an id names: a public id deciphered, an internal one as it is. */
  toInternal(orderId: string): string;
}

/** The order ids under ORDER_ID_KEY `keyHex`. */
export function orderIdCipher(keyHex: string): OrderIds {
  const ff1 = FF1(ORDER_ID_RADIX, orderIdKeyBytes(keyHex));
  return {
    toPublic: (internalId) => publicIdOf(ff1.encrypt(internalDigits(internalId))),
    toInternal: (orderId) => (isPublicOrderId(orderId) ? internalIdOf(ff1.decrypt(publicDigits(orderId))) : orderId),
  };
}
