// Every route of the API, for its documentation: the OpenAPI document (public/openapi.json)
// and the reference page (public/docs.html) are generated from this table and the schemas it
// names (`npm run generate`); the Worker never imports it. A test in the Worker suite checks
// that the app mounts exactly these routes and that real responses match the document.
import * as z from "zod/mini";
import type { $ZodType } from "zod/v4/core";
import * as Bodies from "./api-types";
import { STRATEGIES } from "./lab-strategies";
import * as Lab from "./lab-types";
import { MAX_IDEMPOTENCY_KEY_LENGTH } from "./limits";
import * as OrderEvents from "./order-events";
import * as OrderQueries from "./order-queries";
import * as Requests from "./requests";
import "./zod-english";

export type Auth = "none" | "user" | "admin";

export interface ApiResponse {
  description: string;
  body?: $ZodType;
  /** Response headers worth knowing: see RESPONSE_HEADERS. */
  headers?: readonly ResponseHeader[];
}

export interface ApiRoute {
  method: "get" | "post" | "patch" | "delete";
  /** As the app mounts it (hono's `:param` form). */
  path: string;
  tag: "storefront" | "admin" | "lab" | "operations";
  summary: string;
  description?: string;
  auth: Auth;
  params?: z.ZodMiniObject;
  /** Query parameters. */
  query?: z.ZodMiniObject;
  /** Request headers the route reads, besides Authorization. */
  requestHeaders?: Record<string, { required: boolean; description: string }>;
  body?: { schema: $ZodType; required: boolean };
  responses: Record<number, ApiResponse>;
}

/** hono's `/sales/:saleId` is OpenAPI's `/sales/{saleId}`. */
export const openApiPath = (honoPath: string) => honoPath.replace(/:(\w+)/g, "{$1}");

export const RESPONSE_HEADERS = {
  "Retry-After": "seconds to wait before trying again",
  "RateLimit-Limit": "the limiter's burst (draft-ietf-httpapi-ratelimit-headers)",
  "RateLimit-Remaining": "requests left now: 0 on a 429",
  "RateLimit-Reset": "seconds until a request is admitted again",
  "WWW-Authenticate": "the bearer challenge",
  ETag: 'the sale\'s version, quoted ("3"): send it as If-Match to change only that version',
  "Queue-Ticket": "a pre-queue ticket's replacement, once the draw placed it: poll with this one from now on",
} as const;
export type ResponseHeader = keyof typeof RESPONSE_HEADERS;

const error = (description: string, headers?: readonly ResponseHeader[]): ApiResponse => ({
  description,
  body: Bodies.ErrorBody,
  headers,
});

const BAD_REQUEST = error("BAD_REQUEST: a malformed id, body or header; nothing changed");
const UNAUTHORIZED = error("UNAUTHORIZED: a missing, forged or expired token", ["WWW-Authenticate"]);
const CROSS_ORIGIN = error("CROSS_ORIGIN: admin routes answer their own origin only");
const TOO_LARGE = error("PAYLOAD_TOO_LARGE: request bodies are limited to 16 KiB");
const RATE_LIMITED = error("RATE_LIMITED: too many requests from this address or user, or the sale's admission rate", [
  "Retry-After",
  "RateLimit-Limit",
  "RateLimit-Remaining",
  "RateLimit-Reset",
]);
const UNAVAILABLE = error("UNAVAILABLE: Redis or D1 cannot be reached right now; nothing changed", ["Retry-After"]);
/** Routes with global limits per user and per client address (counted in Redis, failing closed). */
const CALLER_LIMITED = error(
  "RATE_LIMITED: the isolate's per-user or per-address bucket, or the global limit per user and per client address (counted across every isolate); a caller refused by the global limit is refused in that isolate without a Redis command until its window resets",
  ["Retry-After", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset"],
);
const UNAVAILABLE_OR_UNCOUNTED = error(
  "UNAVAILABLE: Redis or D1 cannot be reached right now (the global limits fail closed: a request they cannot count is refused); nothing changed",
  ["Retry-After"],
);
const SALE_NOT_FOUND = error("SALE_NOT_FOUND: no such sale");
/** A change recorded in D1 that Redis cannot take: the sale's live state is gone until a restore. */
const SALE_NOT_LOADED =
  "SALE_NOT_LOADED: recorded in D1, but Redis lost the sale's live state; POST /admin/sales/{saleId}/restore rebuilds it, this change included";
/** What an Idempotency-Key may be (src/http/idempotency.ts checks it). */
const IDEMPOTENCY_KEY = `1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`;
const ORDER_NOT_FOUND = error("ORDER_NOT_FOUND: no such order, or another user's");
const LAB_OFF = " The lab answers 404 NOT_FOUND for every route unless LAB_ENABLED is true.";

const ENDPOINT_NOT_FOUND = error("ENDPOINT_NOT_FOUND: no such endpoint");
const ADMIN_REFUSALS = { 401: UNAUTHORIZED, 403: CROSS_ORIGIN } as const;
const EndpointList = z.object({ endpoints: z.array(OrderEvents.EndpointView) });
const EVENT_ROUTES: readonly ApiRoute[] = [
  {
    method: "post",
    path: "/admin/webhooks",
    tag: "admin",
    summary: "Register an endpoint for order events",
    description:
      "The endpoint receives the event types it names, each POSTed as {id, type, createdAt, data: {order} or {sale}} and signed per the Standard Webhooks specification (webhook-id, webhook-timestamp, webhook-signature) with the secret answered here, and only here. The url must be https (http to a loopback host only when the Worker runs locally); private, loopback and link-local addresses are refused.",
    auth: "admin",
    body: { schema: OrderEvents.CreateEndpointBody, required: true },
    responses: {
      201: { description: "the endpoint, with its secret", body: OrderEvents.EndpointView },
      400: BAD_REQUEST,
      ...ADMIN_REFUSALS,
      413: TOO_LARGE,
    },
  },
  {
    method: "get",
    path: "/admin/webhooks",
    tag: "admin",
    summary: "The endpoints for order events (without their secrets)",
    auth: "admin",
    responses: { 200: { description: "every endpoint", body: EndpointList }, ...ADMIN_REFUSALS },
  },
  {
    method: "patch",
    path: "/admin/webhooks/:id",
    tag: "admin",
    summary: "Change an endpoint's url or event types, or enable or disable it",
    description:
      "Enabling an endpoint the system disabled (it answered 410) clears the reason. Events raised while it was disabled are not sent to it; its deliveries still pending waited, and those due are sent at once when it is enabled.",
    auth: "admin",
    params: OrderEvents.EndpointIdParam,
    body: { schema: OrderEvents.UpdateEndpointBody, required: true },
    responses: {
      200: { description: "the endpoint", body: OrderEvents.EndpointView },
      400: BAD_REQUEST,
      ...ADMIN_REFUSALS,
      404: ENDPOINT_NOT_FOUND,
      413: TOO_LARGE,
    },
  },
  {
    method: "post",
    path: "/admin/webhooks/:id/rotate-secret",
    tag: "admin",
    summary: "A new signing secret, at once (answered here only)",
    auth: "admin",
    params: OrderEvents.EndpointIdParam,
    responses: {
      200: { description: "the endpoint, with its new secret", body: OrderEvents.EndpointView },
      400: BAD_REQUEST,
      ...ADMIN_REFUSALS,
      404: ENDPOINT_NOT_FOUND,
    },
  },
  {
    method: "get",
    path: "/admin/webhooks/:id/deliveries",
    tag: "admin",
    summary: "What was sent to an endpoint, newest first: status, attempts, last answer, every attempt's time and answer",
    auth: "admin",
    params: OrderEvents.EndpointIdParam,
    query: OrderEvents.CursorQuery,
    responses: {
      200: { description: "a page of deliveries; nextCursor fetches the next", body: OrderEvents.DeliveryPage },
      400: BAD_REQUEST,
      ...ADMIN_REFUSALS,
      404: ENDPOINT_NOT_FOUND,
    },
  },
  {
    method: "post",
    path: "/admin/webhooks/:id/deliveries/:deliveryId/replay",
    tag: "admin",
    summary: "Send a delivery again, with the same webhook-id and body",
    auth: "admin",
    params: OrderEvents.DeliveryIdParam,
    responses: {
      202: { description: "the delivery, pending again", body: OrderEvents.DeliveryView },
      400: BAD_REQUEST,
      ...ADMIN_REFUSALS,
      404: error("DELIVERY_NOT_FOUND: no such delivery of this endpoint"),
    },
  },
];

const ORDER_LIST_ROUTES: readonly ApiRoute[] = [
  {
    method: "get",
    path: "/api/orders",
    tag: "storefront",
    summary: "The caller's own orders across sales, newest first",
    description: `${OrderQueries.DEFAULT_ORDER_PAGE} orders a page; nextCursor (null on the last page) asks for the next. Orders still pending (not yet recorded in D1) are not listed; GET /api/orders/{orderId} shows them.`,
    auth: "user",
    query: OrderQueries.BuyerOrdersQuery,
    responses: {
      200: { description: "a page of the caller's orders", body: Bodies.BuyerOrderPage },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      429: CALLER_LIMITED,
      503: UNAVAILABLE_OR_UNCOUNTED,
    },
  },
  {
    method: "get",
    path: "/admin/sales/:saleId/orders",
    tag: "admin",
    summary: "A sale's orders, newest first, optionally of one status",
    description: `limit orders a page (default ${OrderQueries.DEFAULT_ORDER_PAGE}, at most ${OrderQueries.MAX_ORDER_PAGE}); nextCursor (null on the last page) asks for the next with the same status.`,
    auth: "admin",
    params: Requests.SaleIdParam,
    query: OrderQueries.SaleOrdersQuery,
    responses: {
      200: { description: "a page of orders", body: Bodies.AdminOrderPage },
      400: BAD_REQUEST,
      ...ADMIN_REFUSALS,
      404: SALE_NOT_FOUND,
    },
  },
  {
    method: "get",
    path: "/admin/sales/:saleId/orders.csv",
    tag: "admin",
    summary: "The same list as CSV (text/csv), streamed",
    description:
      "A header row (orderId,saleId,userId,status,quantity,variant,amount,currency,createdAt,closedAt,refundDue), then every order, newest first, read a page at a time: a sale of any size exports in bounded memory. A text cell a spreadsheet would run as a formula is prefixed with a quote mark.",
    auth: "admin",
    params: Requests.SaleIdParam,
    query: OrderQueries.OrderExportQuery,
    responses: {
      200: { description: "text/csv with a header row" },
      400: BAD_REQUEST,
      ...ADMIN_REFUSALS,
      404: SALE_NOT_FOUND,
    },
  },
  {
    method: "get",
    path: "/admin/orders/:orderId",
    tag: "admin",
    summary: "One order with its history (state changes), payment attempts and event deliveries",
    auth: "admin",
    params: Requests.OrderIdParam,
    responses: {
      200: { description: "the order", body: Bodies.AdminOrderDetail },
      400: BAD_REQUEST,
      ...ADMIN_REFUSALS,
      404: error("ORDER_NOT_FOUND: D1 has no such order (one still pending is not recorded yet)"),
    },
  },
];

const KEY_REUSED = error("IDEMPOTENCY_KEY_REUSED: this Idempotency-Key was used with another request");
const LabCheckoutParams = z.extend(Requests.LabSaleIdParam, { strategy: z.enum(STRATEGIES) });

const ROUTES: readonly ApiRoute[] = [
  {
    method: "get",
    path: "/healthz",
    tag: "operations",
    summary: "The Worker answers",
    auth: "none",
    responses: { 200: { description: "alive", body: Bodies.Health } },
  },
  {
    method: "get",
    path: "/api/config",
    tag: "storefront",
    summary: "This deployment's settings for a storefront page",
    auth: "none",
    responses: { 200: { description: "the settings", body: Bodies.StorefrontConfig }, 429: RATE_LIMITED },
  },
  {
    method: "post",
    path: "/api/dev/login",
    tag: "storefront",
    summary: "Local sign-in: a user token for any name (DEV_LOGIN=true only)",
    description: "Off by default and in production: then it answers 404 NOT_FOUND like a route that does not exist.",
    auth: "none",
    body: { schema: Requests.DevLoginBody, required: true },
    responses: {
      200: { description: "a token for the name, signed like the shop's", body: Bodies.DevLoginToken },
      400: BAD_REQUEST,
      404: error("NOT_FOUND: DEV_LOGIN is off"),
      413: TOO_LARGE,
      429: CALLER_LIMITED,
      503: UNAVAILABLE_OR_UNCOUNTED,
    },
  },
  {
    method: "get",
    path: "/api/sales",
    tag: "storefront",
    summary: "The catalog: upcoming and live sales by start, a page at a time",
    description:
      "20 sales a page, each with its live remaining stock; nextCursor (null on the last page) asks for the next. Pages are cached (a second in each isolate, seconds in Redis, evicted when any sale changes).",
    auth: "none",
    query: Requests.CatalogQuery,
    responses: {
      200: { description: "a page of the catalog", body: Bodies.CatalogPage },
      400: error("INVALID_CURSOR: a cursor this API did not give, altered or expired (30 minutes); nothing is read or cached"),
      429: RATE_LIMITED,
      503: UNAVAILABLE,
    },
  },
  {
    method: "get",
    path: "/api/sales/:saleId",
    tag: "storefront",
    summary: "A sale with its live remaining stock",
    description:
      "The sale's record is cached (500 ms in each isolate, then Redis in front of D1, evicted on every change); remaining stock is read live from Redis. Polling faster than 500 ms shows nothing new.",
    auth: "none",
    params: Requests.SaleIdParam,
    responses: {
      200: { description: "the sale", body: Bodies.SaleView },
      400: BAD_REQUEST,
      404: SALE_NOT_FOUND,
      429: RATE_LIMITED,
      503: UNAVAILABLE,
    },
  },
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
    responses: {
      202: { description: "reserved: the order is pending until it settles", body: Bodies.CheckoutAccepted },
      400: error("BAD_REQUEST: a malformed id, body or header; VARIANT_REQUIRED: the sale has variants and none was named"),
      401: UNAUTHORIZED,
      403: error(
        "QUEUE_PASS_REQUIRED (a queued sale, no Queue-Pass) or QUEUE_PASS_INVALID (forged, another buyer's or another sale's, or not admitted); HUMAN_CHECK_REQUIRED (the sale has humanCheck and no waiting room, and no Human-Check token came) or HUMAN_CHECK_FAILED (Cloudflare did not vouch for the token, for this sale's action, this once); nothing reserved",
      ),
      404: error("SALE_NOT_FOUND: no such sale; VARIANT_NOT_FOUND: the sale has no variant of that id"),
      409: error(
        "SOLD_OUT (the variant named, where the sale has variants: the message names it), QUANTITY_UNAVAILABLE (fewer units remain of the variant; the message says how many), ALREADY_PURCHASED (the buyer holds the limit; the message names their latest order), PER_USER_LIMIT_EXCEEDED, SALE_NOT_STARTED, SALE_ENDED, SALE_PAUSED, SALE_CANCELLED, QUEUE_PASS_USED (the pass bought already) or QUEUE_PASS_EXPIRED (its time ran out; the next place was let in)",
      ),
      413: TOO_LARGE,
      422: KEY_REUSED,
      429: RATE_LIMITED,
      503: UNAVAILABLE,
    },
  },
  {
    method: "post",
    path: "/api/sales/:saleId/queue",
    tag: "storefront",
    summary: "Join a sale's waiting room: the ticket to poll with",
    description:
      "Once per buyer and sale: joining again answers the same ticket and place. A fifo sale places buyers in arrival order; a random sale places everyone who joined during the pre-queue at the start, by the draw its seed commitment fixes (place is null until then), and later joiners behind them in arrival order. Callers a deny rule matches, whose Human-Check token does not pass, or who bring a user id beyond ACCOUNTS_PER_ADDRESS from one client address to the sale are not told so: they get a ticket like any other whose place never comes up (its polls cost no Redis command), and are counted in the sale's stats.",
    auth: "user",
    params: Requests.SaleIdParam,
    requestHeaders: {
      "Human-Check": {
        required: false,
        description:
          "a Turnstile token, rendered with action sale-<saleId>, for a sale with humanCheck (the site key is in GET /api/config); each token passes once",
      },
    },
    responses: {
      200: { description: "in line", body: Bodies.QueueJoined },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      403: error("HUMAN_CHECK_REQUIRED: the sale has humanCheck and no Human-Check token came; nothing joined"),
      404: SALE_NOT_FOUND,
      409: error("QUEUE_NOT_OPEN (before startsAt - queue.prequeueSec) or QUEUE_OFF (the sale has no waiting room)"),
      429: CALLER_LIMITED,
      503: UNAVAILABLE_OR_UNCOUNTED,
    },
  },
  {
    method: "get",
    path: "/api/sales/:saleId/queue",
    tag: "storefront",
    summary: "Where the buyer stands in the waiting room, and the pass once admitted",
    description:
      "Costs no Redis command of its own: the place travels in the ticket and the line's progress is read at most once a second per isolate. retryAfterSec says when to ask again. A pre-queue ticket polled after the start is placed once and answered with its replacement in the Queue-Ticket header.",
    auth: "user",
    params: Requests.SaleIdParam,
    requestHeaders: { "Queue-Ticket": { required: true, description: "the ticket POST .../queue gave" } },
    responses: {
      200: { description: "the buyer's standing", body: Bodies.QueuePosition, headers: ["Queue-Ticket"] },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      403: error("QUEUE_TICKET_INVALID: a forged ticket, or another buyer's or another sale's"),
      404: SALE_NOT_FOUND,
      429: RATE_LIMITED,
      503: UNAVAILABLE,
    },
  },
  {
    method: "get",
    path: "/api/orders/:orderId",
    tag: "storefront",
    summary: "Where the token user's order is",
    auth: "user",
    params: Requests.OrderIdParam,
    responses: {
      200: { description: "the order", body: Bodies.OrderView },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      404: ORDER_NOT_FOUND,
      429: CALLER_LIMITED,
      503: UNAVAILABLE_OR_UNCOUNTED,
    },
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
    responses: {
      200: { description: "paid", body: Bodies.OrderView },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      402: error("PAYMENT_DECLINED: the provider declined the charge; the order still awaits payment"),
      404: ORDER_NOT_FOUND,
      409: error(
        "ORDER_NOT_PAYABLE: expired, cancelled, already paid, or still pending (then with Retry-After); the message says which. PAYMENT_IN_PROGRESS (with Retry-After): another payment for this order is being processed; nothing was charged",
        ["Retry-After"],
      ),
      413: TOO_LARGE,
      422: KEY_REUSED,
      429: CALLER_LIMITED,
      503: error(
        "UNAVAILABLE: the provider did not answer in time, or storage cannot be reached (the global limits fail closed); retry with the same key. PAYMENT_UNAVAILABLE: the dev provider is configured and the request's Host is not loopback; nothing is charged",
        ["Retry-After"],
      ),
    },
  },
  {
    method: "post",
    path: "/api/orders/:orderId/cancel",
    tag: "storefront",
    summary: "Cancel the token user's order while it awaits payment: its units go back on sale",
    auth: "user",
    params: Requests.OrderIdParam,
    responses: {
      200: { description: "cancelled", body: Bodies.OrderView },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      404: ORDER_NOT_FOUND,
      409: error("ORDER_NOT_CANCELLABLE: paid, expired, cancelled, confirmed, or still pending (then with Retry-After)", [
        "Retry-After",
      ]),
      429: CALLER_LIMITED,
      503: UNAVAILABLE_OR_UNCOUNTED,
    },
  },
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
    responses: {
      200: { description: "received", body: Bodies.WebhookReceived },
      400: BAD_REQUEST,
      401: error("UNAUTHORIZED: a missing or wrong signature, or a timestamp out of tolerance"),
      404: error("ORDER_NOT_FOUND: no such settled order, or NOT_FOUND: webhooks are not configured"),
      409: error(
        "PAYMENT_IN_PROGRESS (with Retry-After): a payment.succeeded for an order whose pay attempt is in flight is not applied; deliver it again, and it is decided once that attempt has ended",
        ["Retry-After"],
      ),
      413: TOO_LARGE,
    },
  },
  {
    method: "post",
    path: "/admin/sales",
    tag: "admin",
    summary: "Create a sale",
    description:
      'A sale may come in 2 to 50 variants (sizes, colours, tiers), each with its own stock and optionally its own price; the sale\'s stock is then their sum and is not sent. Without variants the sale has one, "default".',
    auth: "admin",
    requestHeaders: {
      "Idempotency-Key": {
        required: false,
        description: `${IDEMPOTENCY_KEY}: a retry with the same key never creates a second sale`,
      },
    },
    body: { schema: Requests.CreateSaleBody, required: true },
    responses: {
      200: { description: "the sale this Idempotency-Key created before", body: Bodies.AdminSaleView, headers: ["ETag"] },
      201: { description: "the sale, created", body: Bodies.AdminSaleView, headers: ["ETag"] },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      403: CROSS_ORIGIN,
      409: error(`NO_ID_SLOT: too many sales overlap this window, or (a retry) ${SALE_NOT_LOADED}`),
      413: TOO_LARGE,
      503: UNAVAILABLE,
    },
  },
  {
    method: "patch",
    path: "/admin/sales/:saleId",
    tag: "admin",
    summary: "Edit a sale",
    description:
      "Name, description and image at any time; the window, the admission and humanCheck only before the sale starts, the waiting room only before joining opens; stock only upward, until the sale ends. A sale with variants changes a variant's stock (upward), label or price (before the start) by listing it in variants, or adds one before the start; variants not listed stay. The same edit twice changes nothing more. D1 is written first, then Redis, then the cached copies are evicted (and again two seconds later).",
    auth: "admin",
    params: Requests.SaleIdParam,
    requestHeaders: {
      "If-Match": {
        required: false,
        description: 'the ETag of the version this edit is based on ("3"); another version answers 412',
      },
    },
    body: { schema: Requests.UpdateSaleBody, required: true },
    responses: {
      200: { description: "the sale as edited", body: Bodies.AdminSaleView, headers: ["ETag"] },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      403: CROSS_ORIGIN,
      404: SALE_NOT_FOUND,
      409: error(
        `SALE_STARTED (window, admission, humanCheck, a variant added or repriced after the start), QUEUE_OPEN (the waiting room's settings once joining opened), STOCK_DECREASE, SALE_CLOSED (stock of an ended or cancelled sale), NO_ID_SLOT, EDIT_CONFLICT, or ${SALE_NOT_LOADED}`,
      ),
      412: error("PRECONDITION_FAILED: If-Match named another version", ["ETag"]),
      413: TOO_LARGE,
      503: error("UNAVAILABLE: the edit is recorded in D1 but Redis could not be reached; send it again to finish", [
        "Retry-After",
      ]),
    },
  },
  ...(
    [
      ["pause", "Pause a sale: checkout answers 409 SALE_PAUSED until it is resumed"],
      ["resume", "Resume a paused sale"],
      [
        "cancel",
        "Cancel a sale for good: checkout answers 409 SALE_CANCELLED; orders holding units are cancelled (paid ones marked for a refund) and their units given back, orders still settling as they settle",
      ],
    ] as const
  ).map(([action, summary]): ApiRoute => {
    const responses: Record<number, ApiResponse> = {
      200: { description: "the sale after the change", body: Bodies.AdminSaleView, headers: ["ETag"] },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      403: CROSS_ORIGIN,
      404: SALE_NOT_FOUND,
      409: error(
        action === "cancel"
          ? SALE_NOT_LOADED
          : `SALE_CANCELLED: a cancelled sale is neither paused nor resumed, or ${SALE_NOT_LOADED}`,
      ),
      503: error("UNAVAILABLE: the change is recorded in D1 but Redis could not be reached; send it again to finish", [
        "Retry-After",
      ]),
    };
    return {
      method: "post",
      path: `/admin/sales/:saleId/${action}`,
      tag: "admin",
      summary,
      description: "Idempotent: the same request twice changes nothing more. Checkout's isolates learn it within a second.",
      auth: "admin",
      params: Requests.SaleIdParam,
      responses,
    };
  }),
  {
    method: "post",
    path: "/admin/sales/:saleId/restore",
    tag: "admin",
    summary: "Rebuild a sale's live state in Redis from D1, after Redis lost it",
    description:
      "Optional: a sale Redis lost or holds behind D1 is detected and rebuilt by itself (the jobs queue, the cron); this pushes the same rebuild by hand. Under the sale's fenced lock: remaining stock, each buyer's hold, ended orders as returned, the order-id sequence; checkout answers 503 for the sale until then. Refused while orders accepted before the loss are still reaching D1: until every order id reported minted before it has landed, or, without such a report, until none has landed for RESTORE_QUIET_MS.",
    auth: "admin",
    params: Requests.SaleIdParam,
    responses: {
      200: { description: "what was rebuilt", body: Bodies.RestoreReport },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      403: CROSS_ORIGIN,
      404: SALE_NOT_FOUND,
      409: error(
        "SALE_LOADED (nothing to restore), RESTORE_IN_PROGRESS, ORDERS_IN_FLIGHT (with Retry-After), RESTORE_INTERRUPTED (the lock was lost; send it again) or SALE_ARCHIVED",
        ["Retry-After"],
      ),
      503: UNAVAILABLE,
    },
  },
  {
    method: "post",
    path: "/admin/scheduled",
    tag: "admin",
    summary: "Run the cron's jobs now (local stack only: LOOPBACK_HOSTS_ONLY=true)",
    description:
      "What the cron trigger runs every minute: the outbox re-drive, the expiry sweep and returns, order events due, the Bloom filter's upkeep, the clean-up and the recovery of sales Redis lost. npm start fires it here every minute (wrangler dev fires no cron). Only where the Worker answers loopback Host names alone (LOOPBACK_HOSTS_ONLY=true); elsewhere 404 NOT_FOUND like a route that does not exist.",
    auth: "admin",
    responses: {
      204: { description: "every job ran" },
      401: UNAUTHORIZED,
      403: CROSS_ORIGIN,
      404: error("NOT_FOUND: LOOPBACK_HOSTS_ONLY is not true"),
    },
  },
  {
    method: "get",
    path: "/admin/sales/:saleId/report",
    tag: "admin",
    summary: "Reconciliation: Redis against D1 for one sale",
    auth: "admin",
    params: Requests.SaleIdParam,
    responses: {
      200: { description: "the report", body: Bodies.ReconciliationReport },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      403: CROSS_ORIGIN,
      404: SALE_NOT_FOUND,
      503: UNAVAILABLE,
    },
  },
  {
    method: "get",
    path: "/admin/sales/:saleId/stats",
    tag: "admin",
    summary: "The admin console's poll: checkout outcomes per second, the sale and its report",
    auth: "admin",
    params: Requests.SaleIdParam,
    responses: {
      200: { description: "the last five minutes", body: Bodies.SaleStats },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      403: CROSS_ORIGIN,
      404: SALE_NOT_FOUND,
      503: UNAVAILABLE,
    },
  },
  ...EVENT_ROUTES,
  ...ORDER_LIST_ROUTES,
  {
    method: "get",
    path: "/admin/sales/:saleId/queue",
    tag: "admin",
    summary: "The waiting room's counts: joined, waiting, admitted, passes used and expired",
    description: "Moves the line forward to now first, as a poll would.",
    auth: "admin",
    params: Requests.SaleIdParam,
    responses: {
      200: { description: "the counts, and the seed once the sale is over", body: Bodies.QueueStats },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      403: CROSS_ORIGIN,
      404: SALE_NOT_FOUND,
      409: error("QUEUE_OFF: the sale has no waiting room"),
      503: UNAVAILABLE,
    },
  },
  {
    method: "get",
    path: "/admin/sales/:saleId/queue/places",
    tag: "admin",
    summary: "Who holds each place in the waiting room, 1,000 places a page",
    description:
      "Places 1..drawn are a random sale's pre-queue in draw order: with the seed the public sale reveals once it ends, anyone handed this list can recompute them (npm run verify-queue).",
    auth: "admin",
    params: Requests.SaleIdParam,
    query: Requests.QueuePlacesQuery,
    responses: {
      200: { description: "a page of places", body: Bodies.QueuePlaces },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      403: CROSS_ORIGIN,
      404: SALE_NOT_FOUND,
      409: error("QUEUE_OFF: the sale has no waiting room"),
      503: UNAVAILABLE,
    },
  },
  {
    method: "get",
    path: "/admin/deny-rules",
    tag: "admin",
    summary: "Deny rules: callers refused quietly",
    description:
      "A caller a rule matches (client address, user id, or a part of its user agent) is answered as a person could be: at a queue join, a ticket whose place never comes up; at checkout, HUMAN_CHECK_FAILED where the sale asks for the check there, SOLD_OUT otherwise. It is counted as DENIED in the sale's stats. Rules reach every isolate within ten seconds.",
    auth: "admin",
    responses: {
      200: { description: "every rule, newest first", body: Bodies.DenyRuleList },
      401: UNAUTHORIZED,
      403: CROSS_ORIGIN,
      503: UNAVAILABLE,
    },
  },
  {
    method: "post",
    path: "/admin/deny-rules",
    tag: "admin",
    summary: "Add a deny rule (the same kind and value again replaces its note and expiry)",
    auth: "admin",
    body: { schema: Requests.DenyRuleBody, required: true },
    responses: {
      201: { description: "the rule, with its id", body: Bodies.DenyRuleView },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      403: CROSS_ORIGIN,
      409: error("DENY_RULES_FULL: the most rules kept; delete some first"),
      413: TOO_LARGE,
      503: UNAVAILABLE,
    },
  },
  {
    method: "delete",
    path: "/admin/deny-rules/:ruleId",
    tag: "admin",
    summary: "Remove a deny rule",
    auth: "admin",
    params: Requests.DenyRuleIdParam,
    responses: {
      200: { description: "the rules left, newest first", body: Bodies.DenyRuleList },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      403: CROSS_ORIGIN,
      404: error("RULE_NOT_FOUND: no deny rule has this id"),
      503: UNAVAILABLE,
    },
  },
  {
    method: "post",
    path: "/lab/sales",
    tag: "lab",
    summary: "Create a lab sale: one copy per strategy",
    description: LAB_OFF.trim(),
    auth: "admin",
    body: { schema: Requests.CreateLabSaleBody, required: true },
    responses: {
      201: { description: "the lab sale", body: Lab.LabSaleCreated },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      404: error("NOT_FOUND: the lab is off"),
      413: TOO_LARGE,
      503: UNAVAILABLE,
    },
  },
  {
    method: "post",
    path: "/lab/read-path",
    tag: "lab",
    summary: "Page views with some cache guards off: what reaches D1",
    description: `The read path's failure modes, shown: cold, warm and stale entries and ids that never existed, each guard (bloom, jitter, rebuildOnce, setIfNewer) on or off.${LAB_OFF}`,
    auth: "admin",
    body: { schema: Requests.ReadPathExperimentBody, required: true },
    responses: {
      200: { description: "D1's queries for the views", body: Lab.ReadPathFigures },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      404: error("NOT_FOUND: the lab is off"),
      413: TOO_LARGE,
      503: UNAVAILABLE,
    },
  },
  {
    method: "get",
    path: "/lab/sales/:labSaleId/report",
    tag: "lab",
    summary: "What each strategy really sold",
    description: LAB_OFF.trim(),
    auth: "admin",
    params: Requests.LabSaleIdParam,
    responses: {
      200: { description: "the report", body: Lab.LabSaleReport },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      404: error("SALE_NOT_FOUND, or NOT_FOUND: the lab is off"),
      503: UNAVAILABLE,
    },
  },
  {
    method: "post",
    path: "/lab/:strategy/sales/:labSaleId/checkout",
    tag: "lab",
    summary: "Buy from a lab sale's copy under one strategy",
    description: `The checkout's answers, under a textbook strategy.${LAB_OFF}`,
    auth: "user",
    params: LabCheckoutParams,
    responses: {
      202: { description: "reserved", body: Bodies.CheckoutAccepted },
      400: BAD_REQUEST,
      401: UNAUTHORIZED,
      404: error("STRATEGY_NOT_FOUND, or NOT_FOUND: the lab is off"),
      409: error("SOLD_OUT or ALREADY_PURCHASED"),
      503: error("UNAVAILABLE or BUSY: Redis cannot be reached, or the strategy gave up under contention", ["Retry-After"]),
    },
  },
];

const NOT_JSON = error("UNSUPPORTED_MEDIA_TYPE: a request body that is not JSON (every body the API reads is)");

/** Admin routes and the webhook: a global limit per client address (src/admission/), failing closed. */
const GLOBALLY_LIMITED: Record<number, ApiResponse> = {
  429: error("RATE_LIMITED: too many failed admin sign-ins or webhook deliveries from this address", [
    "Retry-After",
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
  ]),
  503: UNAVAILABLE,
};
const globallyLimited = (route: ApiRoute) => route.auth === "admin" || route.path === "/webhooks/payments";

/** Any route, when a setting does not parse (a route's own 503 stays). */
const MISCONFIGURED = error("UNAVAILABLE: this server's settings are refused (the message names the setting)", ["Retry-After"]);

/**
 * The table, with what routes share: any POST or PATCH may be refused a body that is not JSON;
 * admin routes and the webhook may be refused by their global limit (a route's own 503 stays);
 * any route may answer 503 while a setting does not parse.
 */
export const API_ROUTES: readonly ApiRoute[] = ROUTES.map((route) => {
  const limited: Record<number, ApiResponse> = globallyLimited(route) ? GLOBALLY_LIMITED : {};
  const bodies: Record<number, ApiResponse> = route.method !== "get" ? { 415: NOT_JSON } : {};
  return { ...route, responses: { 503: MISCONFIGURED, ...limited, ...route.responses, ...bodies } };
});
