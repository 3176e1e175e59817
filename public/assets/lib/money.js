// @ts-check
// Prices as the console's forms take them: typed in the currency's own units ("49.00" euros),
// sent to the API in minor units (4900 cents), and shown back the same way. How many decimals
// a currency has is Intl's answer (2 for EUR, 0 for JPY, 3 for KWD), never a guess.
import { formatMoney } from "./format.js";

/** A three-letter code, as the API takes it. */
const CURRENCY = /^[A-Z]{3}$/;
/** An amount as typed: digits, and one decimal point or comma with digits after it. */
const AMOUNT = /^(\d+)(?:[.,](\d+))?$/;

/** @param {string} currency */
export const isCurrency = (currency) => {
  if (!CURRENCY.test(currency)) return false;
  try {
    new Intl.NumberFormat(undefined, { style: "currency", currency });
    return true;
  } catch {
    return false;
  }
};

/** How many decimals the currency's amounts have (its minor units). @param {string} currency a valid code */
export const decimalsOf = (currency) =>
  new Intl.NumberFormat(undefined, { style: "currency", currency }).resolvedOptions().maximumFractionDigits ?? 2;

/** An example amount in the currency, as typed: "49.00", "4900" (JPY). @param {string} currency */
const exampleOf = (currency) => {
  const decimals = decimalsOf(currency);
  return decimals === 0 ? "4900" : `49.${"0".repeat(decimals)}`;
};

/** "2 decimals", "no decimals". @param {number} decimals */
const decimalsInWords = (decimals) =>
  decimals === 0 ? "no decimals" : `at most ${decimals} ${decimals === 1 ? "decimal" : "decimals"}`;

/**
 * An amount typed in the currency's units as minor units; undefined for an empty field.
 * @param {string} text @param {string} currency a valid code
 * @returns {number | undefined}
 * @throws {Error} saying what to type instead
 */
export function toMinorUnits(text, currency) {
  const typed = text.trim();
  if (typed === "") return undefined;
  const decimals = decimalsOf(currency);
  const parts = AMOUNT.exec(typed);
  const fraction = parts?.[2] ?? "";
  if (!parts || fraction.length > decimals) {
    throw new Error(`write an amount in ${currency} like ${exampleOf(currency)} (${decimalsInWords(decimals)})`);
  }
  const minor = Number(parts[1]) * 10 ** decimals + Number(fraction.padEnd(decimals, "0") || "0");
  if (!Number.isSafeInteger(minor)) throw new Error("that amount is too large");
  return minor;
}

/** Minor units as a form shows them, in the currency's units: 4900 EUR -> "49.00". @param {number} minor @param {string} currency */
export function fromMinorUnits(minor, currency) {
  const decimals = decimalsOf(currency);
  return decimals === 0 ? String(minor) : (minor / 10 ** decimals).toFixed(decimals);
}

/**
 * What a price field's hint says: how to type it in this currency, or what the typed amount
 * shows as on the storefront, or what is wrong with it.
 * @param {string} text @param {string} currency as typed (may not be valid yet)
 */
export function priceHint(text, currency) {
  if (!isCurrency(currency)) return "Give the currency first (three letters, such as EUR).";
  try {
    const minor = toMinorUnits(text, currency);
    return minor === undefined
      ? `In ${currency}, such as ${exampleOf(currency)}.`
      : `Shows as ${formatMoney(minor, currency)} on the storefront.`;
  } catch (err) {
    return `Not a price: ${/** @type {Error} */ (err).message}.`;
  }
}
