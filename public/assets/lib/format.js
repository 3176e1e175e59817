// @ts-check
// How numbers, times and money read on the pages.

const two = (/** @type {number} */ n) => String(n).padStart(2, "0");

/**
 * A countdown: "1d 02:03:04", "02:03:04" or "03:04"; never negative.
 * @param {number} ms
 */
export function formatDuration(ms) {
  const total = Math.max(0, Math.ceil(ms / 1000));
  const days = Math.floor(total / 86_400);
  const hours = Math.floor((total % 86_400) / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = total % 60;
  const clock = hours > 0 || days > 0 ? `${two(hours)}:${two(minutes)}:${two(seconds)}` : `${two(minutes)}:${two(seconds)}`;
  return days > 0 ? `${days}d ${clock}` : clock;
}

/**
 * How long until something, as a person says it: "any moment now", "in a few seconds", "in
 * about 20 seconds", "in about 2 minutes", "in about an hour". For estimates, which a clock to
 * the second would overstate, and for lines a screen reader announces (they change rarely).
 * @param {number} ms
 */
export function formatWait(ms) {
  const seconds = Math.round(ms / 1000);
  if (seconds <= 0) return "any moment now";
  if (seconds < 10) return "in a few seconds";
  if (seconds < 55) return `in about ${Math.round(seconds / 5) * 5} seconds`;
  if (seconds < 90) return "in about a minute";
  const minutes = Math.round(seconds / 60);
  if (minutes < 60) return `in about ${minutes} minutes`;
  const hours = Math.round(minutes / 60);
  if (hours < 2) return "in about an hour";
  if (hours < 48) return `in about ${hours} hours`;
  return `in about ${Math.round(hours / 24)} days`;
}

/**
 * Minor units (cents) in the currency's own format: 1999 USD -> "$19.99", 500 JPY -> "¥500".
 * @param {number} minor
 * @param {string} currency ISO 4217
 */
export function formatMoney(minor, currency) {
  try {
    const format = new Intl.NumberFormat(undefined, { style: "currency", currency });
    const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
    return format.format(minor / 10 ** digits);
  } catch {
    return `${minor} ${currency}`;
  }
}

/** @param {string | number} iso */
export const formatTime = (iso) => new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });

/** A code, state or field name as words: SOLD_OUT, sold_out and soldOut all read "sold out". */
export const words = (/** @type {string} */ code) =>
  code
    .replace(/([a-z])([A-Z])/g, "$1 $2")
    .toLowerCase()
    .replaceAll("_", " ");

/** A moment to the second (events a few seconds apart): "Nov 26, 2026, 1:34:05 AM". @param {string | number} iso */
export const formatMoment = (iso) => new Date(iso).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });

/**
 * A moment as a time of day, with the date only when it is not today: "10:30 AM", or
 * "Nov 29, 10:30 AM". For lines that list a day's times (a sale's lanes).
 * @param {string | number} iso
 */
export function formatClock(iso) {
  const at = new Date(iso);
  const today = at.toDateString() === new Date().toDateString();
  return at.toLocaleString(
    undefined,
    today ? { timeStyle: "short" } : { month: "short", day: "numeric", hour: "numeric", minute: "2-digit" },
  );
}
