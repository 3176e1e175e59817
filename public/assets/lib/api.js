// @ts-check
// The API as the pages call it: one request helper that never throws for an HTTP answer,
// reads the one error shape, Retry-After and the server's clock.

/**
 * @typedef {object} Answer
 * @property {number} status HTTP status; 0 when no answer arrived (network error).
 * @property {any} body The JSON body (an error's is {error: {code, message}}).
 * @property {string} code "OK" for a 2xx, else the error's code (NETWORK_ERROR, HTTP_<status> when not JSON).
 * @property {string} message The error's message, or "".
 * @property {number} retryAfterMs Retry-After in ms, or 0.
 */

/** How far the server's clock is ahead of this one (ms), from the last Date header seen. */
let clockSkewMs = 0;

/** Now, by the server's clock (to within a second): countdowns use it. */
export const serverNow = () => Date.now() + clockSkewMs;

/**
 * @param {string} base the API's origin ("" for this one)
 * @param {string} path
 * @param {{ method?: string, token?: string, adminToken?: string, body?: unknown, headers?: Record<string, string> }} [options]
 * @returns {Promise<Answer>}
 */
export async function call(base, path, options = {}) {
  /** @type {Record<string, string>} */
  const headers = { Accept: "application/json", ...options.headers };
  const bearer = options.token ?? options.adminToken;
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  let res;
  try {
    res = await fetch(`${base}${path}`, {
      method: options.method ?? "GET",
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      cache: "no-store",
    });
  } catch {
    return { status: 0, body: undefined, code: "NETWORK_ERROR", message: "the server could not be reached", retryAfterMs: 0 };
  }
  const date = Date.parse(res.headers.get("Date") ?? "");
  if (Number.isFinite(date)) clockSkewMs = date - Date.now();
  const body = await res.json().catch(() => undefined);
  const retryAfter = Number(res.headers.get("Retry-After"));
  return {
    status: res.status,
    body,
    code: res.ok ? "OK" : (body?.error?.code ?? `HTTP_${res.status}`),
    message: res.ok ? "" : (body?.error?.message ?? res.statusText),
    retryAfterMs: Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter * 1000 : 0,
  };
}

/**
 * A file the API answers (a CSV export, or a batch of codes made as CSV): its bytes and the
 * name its Content-Disposition gives; for an error, its status and message. The whole file is
 * read before it is handed over.
 * @param {string} base @param {string} path
 * @param {{ adminToken?: string, method?: string, body?: unknown, accept?: string }} options
 * @returns {Promise<{ status: number, file?: Blob, filename: string, message: string }>}
 */
export async function fetchFile(base, path, options) {
  /** @type {Record<string, string>} */
  const headers = options.adminToken ? { Authorization: `Bearer ${options.adminToken}` } : {};
  if (options.accept) headers.Accept = options.accept;
  if (options.body !== undefined) headers["Content-Type"] = "application/json";
  let res;
  try {
    res = await fetch(`${base}${path}`, {
      method: options.method ?? "GET",
      headers,
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
      cache: "no-store",
    });
  } catch {
    return { status: 0, filename: "", message: "the server could not be reached" };
  }
  if (!res.ok) {
    const body = await res.json().catch(() => undefined);
    return { status: res.status, filename: "", message: body?.error?.message ?? res.statusText };
  }
  const filename = /filename="([^"]+)"/.exec(res.headers.get("Content-Disposition") ?? "")?.[1] ?? "export";
  return { status: res.status, file: await res.blob(), filename, message: "" };
}

/** @param {number} ms */
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Up to a second of random extra wait, so buyers told to come back in N seconds do not all
 * come back in the same millisecond.
 */
export const jitterMs = () => Math.floor(Math.random() * 1000);

/** A fresh key for one purchase or payment, reused by every retry of it. */
export const idempotencyKey = () => crypto.randomUUID();
