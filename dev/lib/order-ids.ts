// The public order ids of a stack, for the tools and tests that compare what buyers were given
// with what D1 and Redis keep: the Worker's cipher (src/shared/public-order-id.ts), made at once
// (the Worker loads FF1 on first use; a tool may as well load it now).
import { FF1 } from "@noble/ciphers/ff1.js";
import { cipherOf, ORDER_ID_RADIX, type OrderIdCipher, orderIdKeyBytes } from "../../src/shared/public-order-id.ts";

/** The cipher of ORDER_ID_KEY `keyHex`. */
export const orderIdCipher = (keyHex: string): OrderIdCipher => cipherOf(FF1(ORDER_ID_RADIX, orderIdKeyBytes(keyHex)));
