import { Hono } from "hono";
import * as z from "zod/mini";
import { type AppEnv, keepAliveOf } from "../http/app-env";
import { ApiError, badRequest, retryAfter } from "../http/errors";
import { limitWebhookPerIp } from "../http/limits";
import { orderIdsOf } from "../http/secrets";
import { verifyWebhookSignature } from "../http/webhook-signature";
import { applyPaymentEvent } from "../orders/lifecycle";
import { ordersChanged } from "../orders/order-changes";
import { findOrderRecord } from "../orders/order-records";
import type { WebhookReceived } from "../shared/api-types";
import { PaymentEvent } from "../shared/requests";
import { settingsOf } from "../shared/settings";

/**
 * POST /webhooks/payments: an asynchronous payment provider reports a payment. Signed with
 * PAYMENT_WEBHOOK_SECRET (off when it is unset), or during a rotation the secret it replaces,
 * PAYMENT_WEBHOOK_SECRET_PREVIOUS; each event id is applied once. A success that meets a pay
 * attempt in flight waits for it: 409 PAYMENT_IN_PROGRESS, and the provider delivers it again.
 */
export const webhookRoutes = new Hono<AppEnv>().post("/payments", limitWebhookPerIp, async (c) => {
  const { PAYMENT_WEBHOOK_SECRET: secret, PAYMENT_WEBHOOK_SECRET_PREVIOUS: previous, PAYMENT_TIMEOUT_MS } = settingsOf(c.env);
  if (!secret) throw new ApiError("NOT_FOUND", "payment webhooks are not configured");
  const raw = await c.req.text();
  await verifyWebhookSignature(previous ? [secret, previous] : [secret], c.req.header("Webhook-Signature"), raw);
  let json: unknown;
  try {
    json = JSON.parse(raw);
  } catch {
    throw badRequest("the request body is not valid JSON");
  }
  const parsed = z.safeParse(PaymentEvent, json);
  if (!parsed.success) throw badRequest(`invalid payment event: ${parsed.error.issues[0]?.message ?? "unknown shape"}`);
  // The provider knows the order by the id the shop gave it: a public one (or, from before them, an internal one).
  const event = { ...parsed.data, orderId: await orderIdsOf(c.env).toInternal(parsed.data.orderId) };
  const order = await findOrderRecord(c.env.DB, event.orderId);
  if (!order) throw new ApiError("ORDER_NOT_FOUND");
  const outcome = await applyPaymentEvent(c.env.DB, event, order, PAYMENT_TIMEOUT_MS);
  if (typeof outcome === "object") {
    throw new ApiError(
      "PAYMENT_IN_PROGRESS",
      "a payment attempt for this order is being processed; the event was not applied: deliver it again",
      retryAfter(outcome.retryAfterSeconds),
    );
  }
  keepAliveOf(c)(ordersChanged(c.env));
  return c.json({ received: true, outcome } satisfies WebhookReceived);
});
