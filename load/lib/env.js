// Settings from `k6 run -e NAME=value`.

/**
 * @param {string} name
 * @returns {string}
 */
export function required(name) {
  const value = __ENV[name];
  if (!value) throw new Error(`set ${name}: k6 run -e ${name}=...`);
  return value;
}

/**
 * @param {string} name
 * @param {number} fallback
 * @returns {number}
 */
export function number(name, fallback) {
  const value = __ENV[name];
  if (value === undefined || value === "") return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got ${value}`);
  return n;
}

export const BASE_URL = required("BASE_URL").replace(/\/+$/, "");
export const JWT_SECRET = required("JWT_SECRET");
export const ADMIN_TOKEN = required("ADMIN_TOKEN");
