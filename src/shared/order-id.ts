// Order ids are 64-bit and minted inside lua/checkout.lua:
//   (seconds since ORDER_ID_EPOCH) << 32 | slot << 20 | (per-sale sequence mod 2^20)
// The slot is unique among sales whose windows overlap (chosen in D1 when the sale is
// created), the sequence is unique within a sale, and ids are only minted inside a
// sale's window, so two sales can never mint the same id in the same second.
// Ids travel as decimal strings: they exceed 2^53.
import { ORDER_ID_PATTERN } from "./limits";

export const ORDER_ID_EPOCH_SECONDS = 1_767_225_600; // 2026-01-01T00:00:00Z
export const ID_SLOTS = 4096;

export interface OrderIdParts {
  /** Unix time of the reservation, whole seconds. */
  unixSeconds: number;
  slot: number;
  sequence: number;
}

export function isOrderId(value: string): boolean {
  return ORDER_ID_PATTERN.test(value) && BigInt(value) < 1n << 63n;
}

export function decodeOrderId(orderId: string): OrderIdParts {
  const id = BigInt(orderId);
  return {
    unixSeconds: Number(id >> 32n) + ORDER_ID_EPOCH_SECONDS,
    slot: Number((id >> 20n) & 0xfffn),
    sequence: Number(id & 0xfffffn),
  };
}
