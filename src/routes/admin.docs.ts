// The admin's sale routes, documented beside src/routes/admin.ts
// (src/shared/route-docs.ts: the Worker never imports them).
import * as Bodies from "../shared/api-types";
import * as Requests from "../shared/requests";
import { IDEMPOTENCY_KEY, type RouteDoc } from "../shared/route-docs";

const stateChanges = [
  ["pause", "Pause a sale: checkout answers 409 SALE_PAUSED until it is resumed"],
  ["resume", "Resume a paused sale"],
  [
    "cancel",
    "Cancel a sale for good: checkout answers 409 SALE_CANCELLED; orders holding units are cancelled (paid ones marked for a refund) and their units given back, orders still settling as they settle",
  ],
] as const;

export const adminDocs: readonly RouteDoc[] = [
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
    example: {
      body: {
        name: "Trail runner, spring drop",
        description: "Sizes EU 38 to 46, one pair per buyer.",
        startsAt: "2026-12-01T09:00:00.000Z",
        endsAt: "2026-12-01T10:00:00.000Z",
        price: 4900,
        currency: "EUR",
        paymentWindowSec: 600,
        variants: [
          { id: "eu-41", label: "EU 41", stock: 60 },
          { id: "eu-42", label: "EU 42", stock: 60 },
        ],
      },
    },
    responses: {
      200: { description: "the sale this Idempotency-Key created before", body: Bodies.AdminSaleView, headers: ["ETag"] },
      201: { description: "the sale, created", body: Bodies.AdminSaleView, headers: ["ETag"] },
    },
    errors: ["BAD_REQUEST", "NO_ID_SLOT", ["SALE_NOT_LOADED", "a retry, after Redis lost the sale"], "IDEMPOTENCY_KEY_REUSED"],
  },
  {
    method: "patch",
    path: "/admin/sales/:saleId",
    tag: "admin",
    summary: "Edit a sale",
    description:
      "Name, description and image at any time; the window, the admission and humanCheck only before the sale starts, the waiting room only before joining opens; stock only upward, until the sale ends. A sale with variants changes a variant's stock (upward), label or price (before the start) by listing it in variants, or adds one before the start; variants not listed stay. The same edit twice changes nothing more. D1 is written first, then Redis, then the cached copies are evicted (and again two seconds later). When Redis cannot be reached the edit stands in D1 and reaches Redis by itself once it answers (the jobs queue, then the cron): the answer says syncPending until then.",
    auth: "admin",
    params: Requests.SaleIdParam,
    requestHeaders: {
      "If-Match": {
        required: false,
        description: 'the ETag of the version this edit is based on ("3"); another version answers 412',
      },
    },
    body: { schema: Requests.UpdateSaleBody, required: true },
    example: { body: { description: "Sizes EU 38 to 46, one pair per buyer. Restocked: EU 42." } },
    responses: { 200: { description: "the sale as edited", body: Bodies.AdminSaleView, headers: ["ETag"] } },
    errors: [
      "BAD_REQUEST",
      "SALE_NOT_FOUND",
      "SALE_STARTED",
      "QUEUE_OPEN",
      "DRAW_OPEN",
      "STOCK_DECREASE",
      "SALE_CLOSED",
      "NO_ID_SLOT",
      "EDIT_CONFLICT",
      "SALE_NOT_LOADED",
      "PRECONDITION_FAILED",
    ],
  },
  ...stateChanges.map(
    ([action, summary]): RouteDoc => ({
      method: "post",
      path: `/admin/sales/:saleId/${action}`,
      tag: "admin",
      summary,
      description:
        "Idempotent: the same request twice changes nothing more. Checkout's isolates learn it within a second. When Redis cannot be reached the change stands in D1 and reaches Redis by itself once it answers: the answer says syncPending until then.",
      auth: "admin",
      params: Requests.SaleIdParam,
      responses: { 200: { description: "the sale after the change", body: Bodies.AdminSaleView, headers: ["ETag"] } },
      errors: ["BAD_REQUEST", "SALE_NOT_FOUND", ...(action === "cancel" ? [] : (["SALE_CANCELLED"] as const)), "SALE_NOT_LOADED"],
    }),
  ),
  {
    method: "post",
    path: "/admin/sales/:saleId/restore",
    tag: "admin",
    summary: "Rebuild a sale's live state in Redis from D1, after Redis lost it",
    description:
      "Optional: a sale Redis lost or holds behind D1 is detected and rebuilt by itself (the jobs queue, the cron); this pushes the same rebuild by hand. Under the sale's fenced lock: remaining stock, each buyer's hold, ended orders as returned, the order-id sequence; checkout answers 503 for the sale until then. Refused while orders accepted before the loss are still reaching D1: until every order id reported minted before it has landed, or, without such a report, until none has landed for RESTORE_QUIET_MS.",
    auth: "admin",
    params: Requests.SaleIdParam,
    responses: { 200: { description: "what was rebuilt", body: Bodies.RestoreReport } },
    errors: [
      "BAD_REQUEST",
      "SALE_NOT_FOUND",
      "SALE_LOADED",
      "RESTORE_IN_PROGRESS",
      "ORDERS_IN_FLIGHT",
      "RESTORE_INTERRUPTED",
      "SALE_ARCHIVED",
      ["UNAVAILABLE", "nothing was restored: send it again"],
    ],
  },
  {
    method: "get",
    path: "/admin/sales/:saleId/report",
    tag: "admin",
    summary: "Reconciliation: Redis against D1 for one sale",
    auth: "admin",
    params: Requests.SaleIdParam,
    responses: { 200: { description: "the report", body: Bodies.ReconciliationReport } },
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "UNAVAILABLE"],
  },
  {
    method: "get",
    path: "/admin/sales/:saleId/stats",
    tag: "admin",
    summary: "The admin console's poll: checkout outcomes per second, the sale and its report",
    auth: "admin",
    params: Requests.SaleIdParam,
    responses: { 200: { description: "the last five minutes", body: Bodies.SaleStats } },
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "UNAVAILABLE"],
  },
];
