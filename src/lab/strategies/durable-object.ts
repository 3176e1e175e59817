import type { Strategy } from "../strategy";

/**
 * One RPC per checkout to the lab sale's own Durable Object, which checks and writes in one
 * synchronous SQLite transaction (src/lab/sale-object.ts). Nothing is merged: every buyer
 * is one request to the object, wherever the buyer is.
 */
export const durableObjectCheckout: Strategy = ({ objects }, labSaleId, userId) => objects.getByName(labSaleId).checkout(userId);
