// The Worker's HTTP contract as the k6 scripts use it.
import http from "k6/http";
import { Counter } from "k6/metrics";
import { ADMIN_TOKEN, BASE_URL, JWT_SECRET, number } from "./env.js";
import { mintUserToken } from "./jwt.js";

// 409 (sold out, already bought) and 429 (throttled) are answers, not failures.
http.setResponseCallback(http.expectedStatuses(200, 201, 202, 409, 429));

/** Responses per outcome; `checkout_failed` is anything the sale's rules do not explain. */
const outcomes = {
  ACCEPTED: new Counter("checkout_accepted"),
  SOLD_OUT: new Counter("checkout_sold_out"),
  ALREADY_PURCHASED: new Counter("checkout_already_purchased"),
  RATE_LIMITED: new Counter("checkout_rate_limited"),
  BUSY: new Counter("checkout_busy"),
  FAILED: new Counter("checkout_failed"),
};

/**
 * `-e VARIANTS=n` (2 to 50): the sale comes in n variants sharing its stock (v1 ... vn), and
 * each checkout asks for one of them at random; 0 (the default): one stock, no variant named.
 */
export const VARIANTS = number("VARIANTS", 0);

/**
 * A sale's stock as POST /admin/sales takes it: `stock` alone, or VARIANTS variants splitting
 * it as evenly as whole units allow.
 * @param {number} stock
 * @returns {{ stock: number } | { variants: { id: string; label: string; stock: number }[] }}
 */
export function saleStock(stock) {
  if (VARIANTS === 0) return { stock };
  return {
    variants: Array.from({ length: VARIANTS }, (_, i) => ({
      id: `v${i + 1}`,
      label: `Variant ${i + 1}`,
      stock: Math.floor(stock / VARIANTS) + (i < stock % VARIANTS ? 1 : 0),
    })),
  };
}

/**
 * A checkout's body and its Content-Type: none for a sale without variants, else a random variant.
 * @returns {{ body: string | null; headers: Record<string, string> }}
 */
export function checkoutBody() {
  if (VARIANTS === 0) return { body: null, headers: {} };
  const variant = `v${1 + Math.floor(Math.random() * VARIANTS)}`;
  return { body: JSON.stringify({ variant }), headers: { "Content-Type": "application/json" } };
}

/**
 * @param {string} method
 * @param {string} path
 * @param {unknown} [body]
 * @returns {any}
 */
export function admin(method, path, body) {
  const res = http.request(method, `${BASE_URL}${path}`, body === undefined ? null : JSON.stringify(body), {
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, "Content-Type": "application/json" },
    tags: { name: "admin" },
  });
  if (res.status < 200 || res.status >= 300) throw new Error(`${method} ${path}: HTTP ${res.status} ${res.body}`);
  return res.json();
}

/**
 * A checkout request for http.request or http.batch (of a random variant with VARIANTS).
 * @param {string} path
 * @param {string} userId
 * @returns {{ method: "POST"; url: string; body: string | null; params: import("k6/http").RefinedParams<"text"> }}
 */
export function checkoutRequest(path, userId) {
  const { body, headers } = checkoutBody();
  return {
    method: "POST",
    url: `${BASE_URL}${path}`,
    body,
    params: {
      headers: { Authorization: `Bearer ${mintUserToken(userId, JWT_SECRET)}`, ...headers },
      tags: { name: "checkout" },
    },
  };
}

/**
 * Counts one checkout answer by outcome.
 * @param {import("k6/http").RefinedResponse<"text">} res
 * @param {Record<string, string>} [tags]
 */
export function countOutcome(res, tags) {
  /** @type {string} */
  let code = "FAILED";
  if (res.status === 202) code = "ACCEPTED";
  else if (res.status === 409 || res.status === 429 || res.status === 503) {
    const body = /** @type {{ error?: { code?: string } } | null} */ (safeJson(res));
    code = body?.error?.code ?? "FAILED";
  }
  const counter = outcomes[/** @type {keyof typeof outcomes} */ (code)] ?? outcomes.FAILED;
  counter.add(1, tags);
}

/** @param {import("k6/http").RefinedResponse<"text">} res */
function safeJson(res) {
  try {
    return res.json();
  } catch {
    return null;
  }
}
