// @ts-check
// Which of the buyer's orders a sale's page shows, however the buyer came to it (a reload in
// the payment window, a new tab, the sale's link from elsewhere): one still open (pending or
// awaiting payment) first; then the one this tab last followed when the list does not have it
// yet (a pending order reaches D1, and so GET /api/orders, within seconds of the purchase);
// then one that holds units (paid, confirmed). Nothing when the buyer has no order there.
import { call } from "./lib/api.js";
import { tabStorage } from "./lib/tab-storage.js";

/** States in which the order is still on its way: the page follows it to its end. */
export const OPEN_ORDER_STATES = new Set(["pending", "awaiting_payment"]);
/** States in which the buyer holds the units. */
export const HELD_ORDER_STATES = new Set(["pending", "awaiting_payment", "confirmed", "paid"]);

/** @param {string} saleId @param {string} userId */
const followedKey = (saleId, userId) => `flash-sale:order:${saleId}:${userId}`;

/** The order this tab follows on the sale's page, found again after a reload. @param {string} saleId @param {string} userId @param {string} orderId */
export function rememberFollowed(saleId, userId, orderId) {
  tabStorage.set(followedKey(saleId, userId), orderId);
}

/**
 * The order to show on the sale's page, with its view when the list had it.
 * @param {string} api the API's origin @param {string} saleId @param {{ token: string, userId: string }} buyer
 * @returns {Promise<{ orderId: string, view?: any } | undefined>}
 */
export async function orderToShow(api, saleId, buyer) {
  // Newest first: an order in its payment window is minutes old, so the first page has it.
  const answer = await call(api, "/api/orders", { token: buyer.token });
  /** @type {any[]} */
  const mine = answer.status === 200 ? answer.body.orders.filter((/** @type {any} */ o) => o.saleId === saleId) : [];
  const open = mine.find((o) => OPEN_ORDER_STATES.has(o.status));
  if (open) return { orderId: open.orderId, view: open };
  const followed = tabStorage.get(followedKey(saleId, buyer.userId));
  if (followed && !mine.some((o) => o.orderId === followed)) return { orderId: followed };
  const held = mine.find((o) => HELD_ORDER_STATES.has(o.status));
  return held && { orderId: held.orderId, view: held };
}
