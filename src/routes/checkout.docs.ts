// POST /api/sales/:saleId/checkout, documented beside src/routes/checkout.ts
// (src/shared/route-docs.ts: the Worker never imports them).
import * as Bodies from "../shared/api-types";
import * as Requests from "../shared/requests";
import { IDEMPOTENCY_KEY, PER_USER_BUCKET, type RouteDoc } from "../shared/route-docs";

export const checkoutDocs: readonly RouteDoc[] = [
  {
    method: "post",
    path: "/api/sales/:saleId/checkout",
    tag: "storefront",
    summary: "Buy: reserve units for the token's user",
    description:
      "Identity comes from the token, never the body. The body is optional for a sale without variants: one unit. A sale with variants (sizes, colours, tiers) needs the variant named, and the buyer's perUserLimit counts units across all of them. A retry after 503 or a lost answer is safe: with the same Idempotency-Key it gets the first attempt's 202 and order; without one, a buyer at their limit gets 409 ALREADY_PURCHASED naming their latest order.",
    auth: "user",
    params: Requests.SaleIdParam,
    requestHeaders: {
      "Idempotency-Key": {
        required: false,
        description: `${IDEMPOTENCY_KEY}: a retry with the same key, quantity and variant reserves nothing new`,
      },
      "Queue-Pass": {
        required: false,
        description:
          "a sale with a waiting room (queue.mode fifo or random) sells only with the pass its poll gave the buyer: admitted, unused, unexpired; it buys once",
      },
      "Human-Check": {
        required: false,
        description:
          "a Turnstile token, rendered with action sale-<saleId>, for a sale with humanCheck and no waiting room (a queued sale asks at its join; its pass carries the check); each token passes once",
      },
    },
    body: { schema: Requests.CheckoutBody, required: false },
    example: { body: { variant: "eu-42", quantity: 1 } },
    responses: { 202: { description: "reserved: the order is pending until it settles", body: Bodies.CheckoutAccepted } },
    errors: [
      "BAD_REQUEST",
      "VARIANT_REQUIRED",
      "QUEUE_PASS_REQUIRED",
      "QUEUE_PASS_INVALID",
      ["HUMAN_CHECK_REQUIRED", "here: a sale with humanCheck and no waiting room, since a queued sale asks at its join"],
      "HUMAN_CHECK_FAILED",
      "SALE_NOT_FOUND",
      "VARIANT_NOT_FOUND",
      "SOLD_OUT",
      "QUANTITY_UNAVAILABLE",
      "ALREADY_PURCHASED",
      "PER_USER_LIMIT_EXCEEDED",
      "SALE_NOT_STARTED",
      "SALE_ENDED",
      "SALE_PAUSED",
      "SALE_CANCELLED",
      "QUEUE_PASS_USED",
      "QUEUE_PASS_EXPIRED",
      "IDEMPOTENCY_KEY_REUSED",
      PER_USER_BUCKET,
      ["RATE_LIMITED", "the sale's admission rate"],
      ["UNAVAILABLE", "nothing is reserved, and a sale Redis lost is refused until it is rebuilt"],
    ],
  },
];
