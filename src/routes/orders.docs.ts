// A buyer's order and its life after the 202, documented beside src/routes/orders.ts
// (src/shared/route-docs.ts: the Worker never imports them).
import * as Bodies from "../shared/api-types";
import * as Requests from "../shared/requests";
import { CALLER_LIMITED, IDEMPOTENCY_KEY, PER_USER_BUCKET, type RouteDoc } from "../shared/route-docs";

export const ordersDocs: readonly RouteDoc[] = [
  {
    method: "get",
    path: "/api/orders/:orderId",
    tag: "storefront",
    summary: "Where the token user's order is",
    auth: "user",
    params: Requests.OrderIdParam,
    responses: { 200: { description: "the order", body: Bodies.OrderView } },
    errors: ["BAD_REQUEST", "ORDER_NOT_FOUND", PER_USER_BUCKET, ...CALLER_LIMITED],
  },
  {
    method: "post",
    path: "/api/orders/:orderId/pay",
    tag: "storefront",
    summary: "Pay the token user's order while it awaits payment",
    description:
      "Charges through the configured provider (PAYMENT_PROVIDER; 404 NOT_FOUND when none is). The dev provider's test tokens: tok_visa succeeds, tok_chargeDeclined is declined, tok_timeout never answers; it acts only on requests whose Host is loopback (127.0.0.1, localhost, [::1]) and answers 503 PAYMENT_UNAVAILABLE elsewhere. The same Idempotency-Key and body again gets the same answer and is never charged twice; a decline leaves the order awaiting payment until it expires. One payment is in flight per order: while one is being processed, a payment with another key is refused with 409 PAYMENT_IN_PROGRESS and charges nothing (a payment whose provider call timed out holds the order until a retry with its own key learns the outcome, at most until the payment window closes).",
    auth: "user",
    params: Requests.OrderIdParam,
    requestHeaders: { "Idempotency-Key": { required: true, description: IDEMPOTENCY_KEY } },
    body: { schema: Requests.PayBody, required: true },
    responses: { 200: { description: "paid", body: Bodies.OrderView } },
    errors: [
      "BAD_REQUEST",
      "PAYMENT_DECLINED",
      "ORDER_NOT_FOUND",
      ["NOT_FOUND", "PAYMENT_PROVIDER names no provider"],
      "ORDER_NOT_PAYABLE",
      "PAYMENT_IN_PROGRESS",
      "IDEMPOTENCY_KEY_REUSED",
      PER_USER_BUCKET,
      ...CALLER_LIMITED,
      ["UNAVAILABLE", "the provider did not answer in time, or storage cannot be reached: retry with the same key"],
      "PAYMENT_UNAVAILABLE",
    ],
  },
  {
    method: "post",
    path: "/api/orders/:orderId/cancel",
    tag: "storefront",
    summary: "Cancel the token user's order while it awaits payment: its units go back on sale",
    auth: "user",
    params: Requests.OrderIdParam,
    responses: { 200: { description: "cancelled", body: Bodies.OrderView } },
    errors: ["BAD_REQUEST", "ORDER_NOT_FOUND", "ORDER_NOT_CANCELLABLE", PER_USER_BUCKET, ...CALLER_LIMITED],
  },
];
