// The examples of the API document: a request and an answer for every operation, made from
// the same schemas the document states. openapi-sampler (Redocly's, what Redoc shows samples
// with) walks each schema; it is told realistic values for the fields people read (one sale,
// one buyer, one order throughout), and a twin's own `example` gives a request body where a
// sample would say less. test/node/api-examples.test.ts checks that every example is valid
// against its schema.
import { sample } from "openapi-sampler";
import { orderReference } from "../../src/shared/public-order-id.ts";
import { openApiPath, type RouteDoc } from "../../src/shared/route-docs.ts";

type Json = Record<string, unknown>;

const ORDER_ID = "13148898591952849528";
const SALE_ID = "42";
const AT = "2026-12-01T09:00:03.412Z";

/** A value for a field of this name, wherever it is. */
const FIELDS: Json = {
  orderId: ORDER_ID,
  reference: orderReference(ORDER_ID),
  saleId: SALE_ID,
  saleName: "Trail runner, spring drop",
  userId: "alice",
  variant: "eu-42",
  variantLabel: "EU 42",
  label: "EU 42",
  currency: "EUR",
  price: 4900,
  amount: 4900,
  quantity: 1,
  stock: 120,
  remaining: 37,
  perUserLimit: 1,
  paymentWindowSec: 600,
  startsAt: "2026-12-01T09:00:00.000Z",
  endsAt: "2026-12-01T10:00:00.000Z",
  createdAt: AT,
  updatedAt: AT,
  expiresAt: "2026-12-01T09:10:03.412Z",
  closedAt: null,
  description: "Sizes EU 38 to 46, one pair per buyer.",
  imageUrl: "https://shop.example/images/trail-runner.jpg",
  humanCheck: false,
  failureReason: null,
  refundDue: false,
  ticket: "qt1.eyJzIjoiNDIiLCJ1IjoiYWxpY2UiLCJwIjoxMn0.3vJx0P1n2gPq8Wc6YcS1rJ0jv9hFz3c2yQm2sE1kZ0o",
  pass: "qp1.eyJzIjoiNDIiLCJ1IjoiYWxpY2UiLCJwIjoxMiwiZSI6MTc2NDU4MDAwMzQxMn0.Yx3b8Qm0kTq7cV1n5rW2hA9dF4gL6pJ8sZ0uE3iO7aQ",
  passExpiresAt: "2026-12-01T09:05:03.412Z",
  prequeueSec: 900,
  admitPerSec: 100,
  passTtlSec: 300,
  place: 12,
  admittedThrough: 12,
  aheadOfYou: 0,
  estimatedWaitSec: 0,
  retryAfterSec: 2,
  url: "https://shop.example/flash-sale/events",
  events: ["order.paid", "order.expired", "order.refund_due"],
  eventId: "evt_5c1d0a2b9e8f7a6b5c4d3e2f",
  endpointId: "ep_0f1e2d3c4b5a69788796a5b4",
  batchId: "cb_5c1d0a2b9e8f7a6b",
  lane: "members",
  codes: ["7KQ2-M9XD-4TRA", "P3HW-8NCB-Z5EV"],
  secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
  token:
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhbGljZSIsImV4cCI6MTc2NDU4MzYwMH0.0n6HqVvGZ0b7kX4l2c9c8dQ1uGk3b6n8m2p4r6t8v0w",
  paymentToken: "tok_visa",
  note: "resold every drop within seconds",
  allowedOrigins: ["https://shop.example"],
  lastError: null,
  answer: 200,
  error: null,
  nextAttemptAt: null,
  disabledReason: null,
  subject: ORDER_ID,
  value: "203.0.113.7",
};

/** Values a field takes in one schema only (an id, a state, a cursor mean other things elsewhere). */
const IN_SCHEMA: Record<string, Json> = {
  SaleView: { id: SALE_ID, name: "Trail runner, spring drop", status: "live" },
  AdminSaleView: { id: SALE_ID, name: "Trail runner, spring drop", status: "live", version: 3 },
  VariantView: { id: "eu-42", soldOut: false },
  QueueView: { seedCommitment: null, seed: null },
  OrderView: { status: "awaiting_payment" },
  AdminOrderView: { status: "awaiting_payment" },
  AdminOrderDetail: { status: "awaiting_payment" },
  CatalogPage: { nextCursor: null },
  BuyerOrderPage: { nextCursor: `1764579603412.${ORDER_ID}` },
  AdminOrderPage: { nextCursor: `1764579603412.${ORDER_ID}` },
  DeliveryPage: { nextCursor: null },
  DeliveryView: {
    id: "dlv_9a8b7c6d5e4f3a2b1c0d9e8f",
    subject: ORDER_ID,
    status: "delivered",
    type: "order.paid",
    lastStatus: 200,
  },
  EndpointView: { id: "ep_0f1e2d3c4b5a69788796a5b4", description: "the shop's fulfilment", disabledReason: null },
  DenyRuleView: { id: "7", kind: "ip", expiresAt: null },
  QueuePosition: { state: "admitted" },
  QueueJoined: { state: "waiting" },
  ReconciliationReport: { archivedAt: null, reconciled: true, largestKey: null },
  StorefrontConfig: { turnstileSiteKey: null },
  // A seed, its SHA-256 and alice's draw key under it, HMAC-SHA256(seed, "alice"): true to each other.
  QueueDrawView: {
    state: "ready",
    seed: "5f1e0c9a7b3d2e4f60718293a4b5c6d7e8f90a1b2c3d4e5f6071829304a5b6c7",
    seedCommitment: "6b1e05c8d09eff533487569de3dbdcdfd6ed1482f43604aa23964f82cd82a30b",
    drawn: 25_000,
    placesRoot: "0c7d2f3a5e81b94c6d0f2a1e3b5c7d9e8f0a2b4c6d8e0f1a3b5c7d9e1f2a4b6c",
    publishedAt: "2026-12-01T10:00:41.207Z",
  },
  QueueDrawPlace: { place: 21_703, drawKey: "de429b234a1e3b16ba3be029c3a16e40ad9b34acbd2ec6f6ecdb81617cbe9bf2" },
  QueueDrawPlacesPage: { next: "22" },
};

/** The document's schemas with the values above as their `example`s, so the sampler takes them. */
function withExamples(schemas: Record<string, Json>): Record<string, Json> {
  const annotate = (schema: unknown, own: Json): unknown => {
    if (Array.isArray(schema)) return schema.map((s) => annotate(s, own));
    if (!schema || typeof schema !== "object") return schema;
    const out: Json = {};
    const { type, minimum, required, additionalProperties, properties } = schema as Json;
    // zod's int() states the safe range as its bounds; sampled, that would be -9007199254740991.
    if (type === "integer" && minimum === Number.MIN_SAFE_INTEGER) out.example = 1;
    // A record over an enum (every state, every strategy) requires each key: sampled as properties, those alone.
    if (type === "object" && !properties && Array.isArray(required) && additionalProperties) {
      return { type, required, properties: Object.fromEntries(required.map((key) => [key, annotate(additionalProperties, {})])) };
    }
    for (const [key, value] of Object.entries(schema)) {
      if (key === "properties" && value && typeof value === "object") {
        out.properties = Object.fromEntries(
          Object.entries(value as Json).map(([name, property]) => {
            const known = name in own ? own[name] : FIELDS[name];
            const annotated = annotate(property, {});
            return [name, known === undefined ? annotated : { ...(annotated as Json), example: known }];
          }),
        );
      } else out[key] = annotate(value, {});
    }
    return out;
  };
  return Object.fromEntries(
    Object.entries(schemas).map(([name, schema]) => [name, annotate(schema, IN_SCHEMA[name] ?? {}) as Json]),
  );
}

/** The path parameters' values, by name. */
const PARAMS: Record<string, string> = {
  saleId: SALE_ID,
  orderId: ORDER_ID,
  ruleId: "7",
  id: "ep_0f1e2d3c4b5a69788796a5b4",
  deliveryId: "dlv_9a8b7c6d5e4f3a2b1c0d9e8f",
  labSaleId: "3f2b8c1e-6a4d-4e9b-8f7a-2c1d0e9b8a7f",
  strategy: "atomic",
  lane: "members",
  batchId: "cb_5c1d0a2b9e8f7a6b",
};

/** The request headers' values, by name. */
const HEADERS: Record<string, string> = {
  "Idempotency-Key": "checkout-7f3c2a91",
  "Queue-Pass": FIELDS.pass as string,
  "Queue-Ticket": FIELDS.ticket as string,
  "Human-Check": "<the Turnstile widget's token>",
  "If-Match": '"3"',
  "Webhook-Signature": "t=1764579603,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd",
};

/** The examples of one operation: a value per parameter, a request body, each success's body. */
export interface OperationExamples {
  parameters: Record<string, string>;
  body?: unknown;
  /** By status, for each success with a body. */
  responses: Record<string, unknown>;
}

export interface ExampleMaker {
  /** The examples of `route`, whose request body's and successes' schemas (as the document states them) are given. */
  operation(route: RouteDoc, schemas: { body?: Json; responses: Record<string, Json> }): OperationExamples;
}

/** Examples over the document's named schemas (its components). */
export function exampleMaker(components: Record<string, Json>): ExampleMaker {
  const document = { components: { schemas: withExamples(components) } };
  const sampled = (schema: Json, skipNonRequired: boolean) =>
    sample(withExamples({ schema }).schema as never, { skipNonRequired, quiet: true }, document);
  return {
    operation(route, schemas) {
      const parameters: Record<string, string> = {};
      for (const name of openApiPath(route.path).match(/\{(\w+)\}/g) ?? []) {
        const bare = name.slice(1, -1);
        parameters[bare] = PARAMS[bare] ?? bare;
      }
      for (const [name, value] of Object.entries(route.example?.query ?? {})) parameters[name] = value;
      for (const name of Object.keys(route.requestHeaders ?? {})) {
        const value = route.example?.headers?.[name] ?? HEADERS[name];
        if (value !== undefined) parameters[name] = value;
      }
      const body = route.example?.body ?? (schemas.body ? sampled(schemas.body, true) : undefined);
      const responses = Object.fromEntries(
        Object.entries(schemas.responses).map(([status, schema]) => [status, sampled(schema, false)]),
      );
      return { parameters, ...(route.body && body !== undefined && { body }), responses };
    },
  };
}
