// @ts-check
// What the console's create and edit forms share: reading a field as the API takes it (whole
// numbers, moments, the checkout pace), each refusal a FormProblem naming the field to fix.
import { $, FormProblem } from "./lib/console-page.js";

/** The API's bounds on a sale's variants (src/shared/limits.ts, VARIANT_COUNT). */
export const VARIANTS = { min: 2, max: 50 };

/** @param {string} id */
export const field = (id) => /** @type {HTMLInputElement} */ ($(id));

/** A datetime-local value for a moment, in this browser's time zone. @param {number} ms */
export function localInput(ms) {
  const d = new Date(ms - new Date(ms).getTimezoneOffset() * 60_000);
  return d.toISOString().slice(0, 16);
}

/** A whole number typed in a field, or undefined when it is empty. @param {HTMLInputElement} input @param {string} what */
export function wholeNumber(input, what) {
  const text = input.value.trim();
  if (text === "") return undefined;
  const n = Number(text);
  if (!Number.isInteger(n)) throw new FormProblem(`${what} is a whole number.`, input);
  return n;
}

/**
 * A datetime-local field as an ISO moment.
 * @param {HTMLInputElement} input @param {string} [missing] what the form says when it is empty
 */
export function moment(input, missing = "Give both the start and the end.") {
  const ms = Date.parse(input.value);
  if (!Number.isFinite(ms)) throw new FormProblem(missing, input);
  return new Date(ms).toISOString();
}

/** The checkout pace, when given: both figures or neither. @param {HTMLInputElement} rate @param {HTMLInputElement} burst */
export function admissionOf(rate, burst) {
  const perSecond = wholeNumber(rate, "Checkouts let in per second");
  const atOnce = wholeNumber(burst, "Checkouts let in at once");
  if (perSecond === undefined && atOnce === undefined) return undefined;
  if (perSecond === undefined || atOnce === undefined) {
    throw new FormProblem(
      "Give both figures of the checkout pace (per second and at once), or neither.",
      perSecond === undefined ? rate : burst,
    );
  }
  return { rate: perSecond, burst: atOnce };
}
