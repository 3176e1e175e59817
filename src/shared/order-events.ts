// Order events: the events the shop's endpoints can subscribe to, the admin's requests and
// answers for endpoints and deliveries, and which endpoint URLs are allowed.

import * as z from "zod/mini";
import { isLoopbackHost } from "./loopback";
import { isPublicHost } from "./public-hosts";
import "./zod-english";

/** Every event an endpoint can subscribe to. */
export const ORDER_EVENT_TYPES = [
  "order.reserved",
  "order.awaiting_payment",
  "order.paid",
  "order.expired",
  "order.cancelled",
  "order.failed",
  "order.refund_due",
  "sale.sold_out",
  "sale.ended",
] as const;
export const OrderEventType = z.enum(ORDER_EVENT_TYPES);
export type OrderEventType = z.infer<typeof OrderEventType>;

const MAX_URL_LENGTH = 2048;
const MAX_ENDPOINT_DESCRIPTION = 200;

/**
 * The URL's host as every check reads it: its trailing dots dropped (`metadata.google.internal.`
 * is `metadata.google.internal`), then read again as a URL reads a host (`0x7f.1..` is
 * 127.0.0.1). Undefined when nothing is left.
 */
function canonicalHost(url: URL): string | undefined {
  const host = url.hostname.replace(/\.+$/, "");
  try {
    return new URL(`https://${host}`).hostname || undefined;
  } catch {
    return undefined;
  }
}

/**
 * Why an endpoint URL is refused, or undefined when it is allowed: https to a public host;
 * plain http only to a loopback host, and only when `allowLoopback` (npm start). Addresses of
 * special purpose (private, shared, loopback, link-local, NAT64, benchmarking, reserved...) are
 * refused as literals in every notation, and names that can only mean a private network
 * (src/shared/public-hosts.ts). Names are not resolved: docs/security.md says why that is safe
 * on Workers and what the check is for.
 */
export function endpointUrlRefusal(raw: string, { allowLoopback }: { allowLoopback: boolean }): string | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return "url must be an absolute URL";
  }
  if (url.username || url.password) return "url must not carry credentials";
  const host = canonicalHost(url);
  if (host === undefined) return "url must name a host";
  const loopback = isLoopbackHost(host);
  if (loopback && allowLoopback && (url.protocol === "http:" || url.protocol === "https:")) return undefined;
  if (url.protocol !== "https:") return "url must be https";
  if (loopback || !isPublicHost(host))
    return "url must not point at a private, loopback, link-local or other special-purpose address or name";
  return undefined;
}

const EndpointUrl = z.string().check(z.minLength(1), z.maxLength(MAX_URL_LENGTH));
const EventTypes = z.array(OrderEventType).check(z.minLength(1), z.maxLength(ORDER_EVENT_TYPES.length));

/** POST /admin/webhooks */
export const CreateEndpointBody = z.strictObject({
  url: EndpointUrl,
  events: EventTypes,
  description: z.optional(z.string().check(z.maxLength(MAX_ENDPOINT_DESCRIPTION))),
});
export type CreateEndpointBody = z.infer<typeof CreateEndpointBody>;

/** PATCH /admin/webhooks/:id */
export const UpdateEndpointBody = z.strictObject({
  url: z.optional(EndpointUrl),
  events: z.optional(EventTypes),
  enabled: z.optional(z.boolean()),
});
export type UpdateEndpointBody = z.infer<typeof UpdateEndpointBody>;

export const EndpointIdParam = z.object({
  id: z.string().check(z.regex(/^ep_[0-9a-f]{24}$/, "the endpoint id must look like ep_<24 hex digits>")),
});
export const DeliveryIdParam = z.object({
  id: EndpointIdParam.shape.id,
  deliveryId: z.string().check(z.regex(/^dlv_[0-9a-f]{24}$/, "the delivery id must look like dlv_<24 hex digits>")),
});
export const CursorQuery = z.object({
  cursor: z.optional(z.string().check(z.regex(/^\d{1,15}$/, "cursor must be a cursor an earlier page returned"))),
});

/** An endpoint as the admin sees it; `secret` only when it was created or its secret rotated. */
export const EndpointView = z.object({
  id: z.string(),
  url: z.string(),
  events: z.array(OrderEventType),
  description: z.string(),
  enabled: z.boolean(),
  /** Why it was disabled by the system (it answered 410), or null. */
  disabledReason: z.nullable(z.string()),
  createdAt: z.iso.datetime(),
  /**
   * Until when deliveries also carry the signature of the secret the last rotation replaced
   * (each delivery is signed with both meanwhile); null when no replaced secret signs.
   */
  previousSecretExpiresAt: z.nullable(z.iso.datetime()),
  secret: z.optional(z.string()),
});
export type EndpointView = z.infer<typeof EndpointView>;

/** One event sent (or to be sent) to one endpoint. */
export const DeliveryView = z.object({
  id: z.string(),
  endpointId: z.string(),
  /** The event's id: the webhook-id header of every attempt. */
  eventId: z.string(),
  type: OrderEventType,
  /** What the event is about: the order's id (its public one), or sale:<id>. */
  subject: z.string(),
  status: z.enum(["pending", "delivered", "failed"]),
  attempts: z.int(),
  /** The endpoint's last answer code; null when it never answered. */
  lastStatus: z.nullable(z.int()),
  lastError: z.nullable(z.string()),
  nextAttemptAt: z.nullable(z.iso.datetime()),
  updatedAt: z.iso.datetime(),
  /**
   * Every attempt made, oldest first, those before a replay included (a replay starts
   * `attempts` again): when, the endpoint's answer code (null when it never answered), and why
   * it did not count.
   */
  attemptLog: z.array(z.object({ at: z.iso.datetime(), answer: z.nullable(z.int()), error: z.nullable(z.string()) })),
});
export type DeliveryView = z.infer<typeof DeliveryView>;

export const DeliveryPage = z.object({ deliveries: z.array(DeliveryView), nextCursor: z.nullable(z.string()) });
export type DeliveryPage = z.infer<typeof DeliveryPage>;
