// POST /webhooks/payments, documented beside src/routes/webhooks.ts
// (src/shared/route-docs.ts: the Worker never imports them).
import * as Bodies from "../shared/api-types";
import * as Requests from "../shared/requests";
import type { RouteDoc } from "../shared/route-docs";

export const webhooksDocs: readonly RouteDoc[] = [
  {
    method: "post",
    path: "/webhooks/payments",
    tag: "operations",
    summary: "An asynchronous payment provider reports a payment",
    description:
      'Signed: Webhook-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>"> with PAYMENT_WEBHOOK_SECRET (404 NOT_FOUND when unset), within 5 minutes of now. Each event id is applied once: a replay answers outcome duplicate and changes nothing. A payment for an order that ended is recorded for refund (outcome refund_due); an event whose paymentRef names the charge the pay route already recorded is that charge again (outcome paid, or refund_due if it was), never a second one.',
    auth: "none",
    requestHeaders: { "Webhook-Signature": { required: true, description: "the provider's signature of the body" } },
    body: { schema: Requests.PaymentEvent, required: true },
    example: {
      body: {
        id: "pay_evt_3Nf2a9",
        type: "payment.succeeded",
        orderId: "13148898591952849528",
        amount: 4900,
        currency: "EUR",
        paymentRef: "ch_3Nf2a9",
      },
    },
    responses: { 200: { description: "received", body: Bodies.WebhookReceived } },
    errors: [
      ["RATE_LIMITED", "too many webhook deliveries from this address: a global limit, counted across every isolate"],
      ["UNAVAILABLE", "the global limit fails closed: a delivery it cannot count is refused"],
      ["NOT_FOUND", "webhooks are not configured"],
      ["UNAUTHORIZED", "a missing or wrong signature, or a timestamp out of tolerance"],
      "BAD_REQUEST",
      ["ORDER_NOT_FOUND", "no settled order of that id"],
      [
        "PAYMENT_IN_PROGRESS",
        "a payment.succeeded for an order whose pay attempt is in flight is not applied: deliver it again, and it is decided once that attempt has ended",
      ],
    ],
  },
];
