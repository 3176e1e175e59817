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
      "Identity comes from the token, never the body. A sale with presale lanes sells from its first lane's startsAt to buyers with a code of a lane open then (or an earlier one), within the lane's allotment, and to everyone from its own startsAt. The body is optional for a sale without variants: one unit. A sale with variants (sizes, colours, tiers) needs the variant named, and the buyer's perUserLimit counts units across all of them. A retry after 503 or a lost answer is safe: with the same Idempotency-Key it gets the first attempt's 202 and order; without one, a buyer at their limit gets 409 ALREADY_PURCHASED naming their latest order.",
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
          "a sale with a waiting room (queue.mode fifo or random) sells only with the pass its poll gave the buyer: admitted, unused, unexpired; it buys once. In a presale lane's window only a pass of that lane's own line buys (with the code), and from startsAt only one of the public line",
      },
      "Human-Check": {
        required: false,
        description:
          "a Turnstile token, rendered with action sale-<saleId>, for a sale with humanCheck and no waiting room (a queued sale asks at its join; its pass carries the check); each token passes once",
      },
      "Access-Code": {
        required: false,
        description:
          "a presale lane's code (docs/lanes.md), while a lane is open and the sale's startsAt has not come: checked, bound to the buyer and one use spent in the same step as the units (case, spaces and hyphens do not matter); from startsAt it is neither checked nor spent",
      },
    },
    body: { schema: Requests.CheckoutBody, required: false },
    example: { body: { variant: "eu-42", quantity: 1 } },
    responses: { 202: { description: "reserved: the order is pending until it settles", body: Bodies.CheckoutAccepted } },
    errors: [
      "BAD_REQUEST",
      "VARIANT_REQUIRED",
      "QUEUE_PASS_REQUIRED",
      [
        "QUEUE_PASS_INVALID",
        "also a pass of a line whose window is not open: a lane's outside its window, the public line's in a lane's",
      ],
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
      "DRAW_ONLY",
      "ACCESS_CODE_REQUIRED",
      "ACCESS_CODE_INVALID",
      "ACCESS_CODE_USED",
      "IDEMPOTENCY_KEY_REUSED",
      PER_USER_BUCKET,
      ["RATE_LIMITED", "the sale's admission rate"],
      [
        "RATE_LIMITED",
        "with an Access-Code: too many codes refused as invalid from this user or address (ACCESS_CODE_FAILURES_PER_*), counted across isolates",
      ],
      ["UNAVAILABLE", "nothing is reserved, and a sale Redis lost is refused until it is rebuilt"],
    ],
  },
];
