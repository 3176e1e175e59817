import { decideWithMemo } from "../../checkout/isolate-memo";
import { reserve } from "../../checkout/reserve";
import { atomicSaleId, LAB_SALE_BUCKETS } from "../keys";
import type { Strategy } from "../strategy";

/**
 * The real reservation, reserve() and lua/checkout.lua unchanged, on the lab's atomic copy
 * (a real sale layout loaded by preloadSale). One EVALSHA does the check, the decrement
 * and the buyer record for every checkout this isolate holds for the copy at that moment;
 * the script's `seq` counts the order ids it minted. The isolate memo refuses sold-out and
 * repeat buyers first, as in front of the real checkout.
 */
export const atomicCheckout: Strategy = async ({ redis, keepAlive }, labSaleId, userId) => {
  const saleId = atomicSaleId(labSaleId);
  const reservation = await decideWithMemo(saleId, userId, () =>
    reserve(redis, saleId, { userId, quantity: 1 }, { keepAlive, buckets: { count: LAB_SALE_BUCKETS, key: null } }),
  );
  switch (reservation.code) {
    case "OK":
      return { code: "OK", orderId: reservation.orderId };
    case "SALE_NOT_STARTED":
    case "SALE_ENDED":
      // Lab sales open at epoch 0 and run for days.
      throw new Error(`lab sale window refused a checkout: ${reservation.code}`);
    default:
      return reservation;
  }
};
