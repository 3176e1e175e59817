// The endpoints for order events and their deliveries, documented beside
// src/routes/event-endpoints.ts (src/shared/route-docs.ts: the Worker never imports them).
import * as z from "zod/mini";
import * as OrderEvents from "../shared/order-events";
import type { RouteDoc } from "../shared/route-docs";
import "../shared/zod-english";

const EndpointList = z.object({ endpoints: z.array(OrderEvents.EndpointView) });

export const eventEndpointsDocs: readonly RouteDoc[] = [
  {
    method: "post",
    path: "/admin/webhooks",
    tag: "admin",
    summary: "Register an endpoint for order events",
    description:
      "The endpoint receives the event types it names, each POSTed as {id, type, createdAt, data: {order} or {sale}} and signed per the Standard Webhooks specification (webhook-id, webhook-timestamp, webhook-signature) with the secret answered here, and only here (it is stored encrypted with ORDER_EVENT_SECRETS_KEY: without that key, 503). The url must be https (http to a loopback host only when the Worker runs locally); addresses of special purpose (private, shared, loopback, link-local, NAT64, benchmarking, reserved, in any notation, IPv4 inside IPv6 included) and names that only mean a private network (localhost, .local, .internal, home.arpa, a single label) are refused, a trailing dot ignored. Names are not resolved.",
    auth: "admin",
    body: { schema: OrderEvents.CreateEndpointBody, required: true },
    responses: { 201: { description: "the endpoint, with its secret", body: OrderEvents.EndpointView } },
    errors: ["BAD_REQUEST", "UNAVAILABLE"],
  },
  {
    method: "get",
    path: "/admin/webhooks",
    tag: "admin",
    summary: "The endpoints for order events (without their secrets)",
    auth: "admin",
    responses: { 200: { description: "every endpoint", body: EndpointList } },
    errors: [],
  },
  {
    method: "patch",
    path: "/admin/webhooks/:id",
    tag: "admin",
    summary: "Change an endpoint's url or event types, or enable or disable it",
    description:
      "A new url is checked as at registration. Enabling an endpoint the system disabled (it answered 410) clears the reason. Events raised while it was disabled are not sent to it; its deliveries still pending waited, and those due are sent at once when it is enabled.",
    auth: "admin",
    params: OrderEvents.EndpointIdParam,
    body: { schema: OrderEvents.UpdateEndpointBody, required: true },
    example: { body: { enabled: false } },
    responses: { 200: { description: "the endpoint", body: OrderEvents.EndpointView } },
    errors: ["BAD_REQUEST", "ENDPOINT_NOT_FOUND"],
  },
  {
    method: "post",
    path: "/admin/webhooks/:id/rotate-secret",
    tag: "admin",
    summary: "A new signing secret (answered here only); the old one still signs for a day",
    description:
      "Deliveries are signed with the new secret from now on, and for 24 hours (previousSecretExpiresAt) with the one it replaced as well: webhook-signature carries both v1 values, either of which verifies, so the shop's receiver keeps working until it takes the new secret. A rotation within those 24 hours replaces the secret kept: rotating twice drops a leaked one at once. Secrets are stored encrypted with ORDER_EVENT_SECRETS_KEY; without it, 503.",
    auth: "admin",
    params: OrderEvents.EndpointIdParam,
    responses: { 200: { description: "the endpoint, with its new secret", body: OrderEvents.EndpointView } },
    errors: ["BAD_REQUEST", "ENDPOINT_NOT_FOUND", "UNAVAILABLE"],
  },
  {
    method: "get",
    path: "/admin/webhooks/:id/deliveries",
    tag: "admin",
    summary: "What was sent to an endpoint, newest first: status, attempts, last answer, every attempt's time and answer",
    auth: "admin",
    params: OrderEvents.EndpointIdParam,
    query: OrderEvents.CursorQuery,
    responses: { 200: { description: "a page of deliveries; nextCursor fetches the next", body: OrderEvents.DeliveryPage } },
    errors: ["BAD_REQUEST", "ENDPOINT_NOT_FOUND"],
  },
  {
    method: "post",
    path: "/admin/webhooks/:id/deliveries/:deliveryId/replay",
    tag: "admin",
    summary: "Send a delivery again, with the same webhook-id and body",
    auth: "admin",
    params: OrderEvents.DeliveryIdParam,
    responses: { 202: { description: "the delivery, pending again", body: OrderEvents.DeliveryView } },
    errors: ["BAD_REQUEST", "DELIVERY_NOT_FOUND"],
  },
];
