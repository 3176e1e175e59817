import { reserve } from "../../checkout/reserve";
import { atomicSaleId } from "../keys";
import type { Strategy } from "../outcome";

/**
 * The real reservation, reserve() and lua/checkout.lua unchanged, on the lab's atomic copy
 * (a real sale layout loaded by preloadSale). One EVALSHA does the check, the decrement
 * and the buyer record for every checkout this isolate holds for the copy at that moment;
 * the script's `seq` counts the order ids it minted.
 */
export const atomicCheckout: Strategy = async (redis, labSaleId, userId, keepAlive) => {
  const reservation = await reserve(redis, atomicSaleId(labSaleId), userId, { keepAlive });
  switch (reservation.outcome) {
    case "OK":
      return { outcome: "OK", orderId: reservation.orderId };
    case "SOLD_OUT":
    case "ALREADY_PURCHASED":
    case "SALE_NOT_FOUND":
      return { outcome: reservation.outcome };
    case "RATE_LIMITED":
      // Lab copies admit far more than a local crowd sends; if it ever bites, the buyer was turned away.
      return { outcome: "BUSY" };
    case "SALE_NOT_STARTED":
    case "SALE_ENDED":
      // Lab sales open at epoch 0 and run for days.
      throw new Error(`lab sale window refused a checkout: ${reservation.outcome}`);
  }
};
