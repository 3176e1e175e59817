// What the API answers with, as schemas: the Worker imports only the inferred types (no
// bundle cost), while the tests check real responses against the schemas and the API's
// documentation is generated from them. The Node-side client reads the same shapes.
import * as z from "zod/mini";
import "./zod-english";

/** Every error the API returns has this one shape. */
export const ErrorBody = z.object({ error: z.object({ code: z.string(), message: z.string() }) });
export type ErrorBody = z.infer<typeof ErrorBody>;

/** cancelled and ended are final; paused may be resumed; live, sold_out and upcoming follow the clock and the stock. */
export const SaleStatus = z.enum(["upcoming", "live", "sold_out", "paused", "ended", "cancelled"]);
export type SaleStatus = z.infer<typeof SaleStatus>;

/** GET /api/sales/:saleId: the sale with its live remaining stock. */
export const SaleView = z.object({
  id: z.string(),
  name: z.string(),
  stock: z.int(),
  remaining: z.int(),
  startsAt: z.iso.datetime(),
  endsAt: z.iso.datetime(),
  status: SaleStatus,
  /** Minor units per unit. */
  price: z.int(),
  currency: z.string(),
  /** Seconds a settled order waits for its payment; 0: no payment step, orders are final when settled. */
  paymentWindowSec: z.int(),
  perUserLimit: z.int(),
  /** Checkout (and the queue join) need a Turnstile token in Human-Check; the site key is in GET /api/config. */
  humanCheck: z.boolean(),
  description: z.string(),
  /** https only; null when the sale has no image. */
  imageUrl: z.nullable(z.string()),
});
export type SaleView = z.infer<typeof SaleView>;

/** POST /admin/sales/:saleId/restore: what the restore rebuilt in Redis from D1. */
export const RestoreReport = z.object({
  saleId: z.string(),
  remaining: z.int(),
  /** Order ids D1 knows (the sequence goes on from here). */
  minted: z.int(),
  /** Buyers holding units, with their holds. */
  buyers: z.int(),
  /** Ended orders (expired, cancelled, failed) recorded as returned. */
  returned: z.int(),
});
export type RestoreReport = z.infer<typeof RestoreReport>;

/** GET /api/sales: upcoming and live sales by start, a page at a time. */
export const CatalogPage = z.object({
  sales: z.array(SaleView),
  /** Pass it as ?cursor= for the next page; null on the last page. */
  nextCursor: z.nullable(z.string()),
});
export type CatalogPage = z.infer<typeof CatalogPage>;

/** POST /admin/sales: the sale as created, with its admission bucket. */
export const AdminSaleView = z.extend(SaleView, {
  admission: z.object({ rate: z.int(), burst: z.int() }),
  /** Grows with every edit and change of state; send it back as If-Match to edit only this version. */
  version: z.int(),
});
export type AdminSaleView = z.infer<typeof AdminSaleView>;

/** POST /api/sales/:saleId/checkout, 202. */
export const CheckoutAccepted = z.object({ orderId: z.string(), status: z.literal("pending"), quantity: z.int() });
export type CheckoutAccepted = z.infer<typeof CheckoutAccepted>;

/**
 * pending (reserved, not in D1 yet) -> awaiting_payment (settled, until expiresAt) -> paid |
 * expired | cancelled; or confirmed when the sale has no payment step; failed when it could
 * never settle (its units went back on sale).
 */
export const OrderStatus = z.enum(["pending", "awaiting_payment", "paid", "expired", "cancelled", "confirmed", "failed"]);
export type OrderStatus = z.infer<typeof OrderStatus>;

/** GET /api/orders/:orderId, and the answer of pay and cancel. */
export const OrderView = z.object({
  orderId: z.string(),
  saleId: z.string(),
  userId: z.string(),
  status: OrderStatus,
  quantity: z.int(),
  /** Minor units: price x quantity. */
  amount: z.int(),
  currency: z.string(),
  /** When an order awaiting payment expires; null otherwise. */
  expiresAt: z.nullable(z.iso.datetime()),
  /** A charge for this order landed after it had ended (or twice): it is recorded for refund. */
  refundDue: z.boolean(),
});
export type OrderView = z.infer<typeof OrderView>;

/** Orders of one state, and the units they hold or held. */
const StateCount = z.object({ orders: z.int(), units: z.int() });

/**
 * GET /admin/sales/:saleId/report: Redis against D1 for one sale. It reconciles when every
 * minted order is in exactly one state, the units Redis holds for buyers are those of the
 * orders that still hold units, D1's sold counter agrees, and every ended order's units are
 * back on sale. Once an ended, settled sale is archived, `redis` holds the figures Redis had
 * when its keys were removed (`archivedAt`), and `loaded` is false.
 */
export const ReconciliationReport = z.object({
  saleId: z.string(),
  stock: z.int(),
  redis: z.object({
    /** Redis holds the sale's live state now (false once archived, or when Redis lost it). */
    loaded: z.boolean(),
    remaining: z.nullable(z.int()),
    /** Units taken: stock - remaining. */
    reserved: z.int(),
    /** Order ids minted so far. */
    minted: z.int(),
    /** Distinct buyers holding units. */
    buyers: z.int(),
    outbox: z.int(),
    /** Orders whose units went back on sale. */
    returned: z.int(),
  }),
  d1: z.object({
    confirmed: z.int(),
    failed: z.int(),
    /** Units held according to D1's guard (awaiting payment, paid, confirmed). */
    soldCounter: z.int(),
    awaitingPayment: z.int(),
    paid: z.int(),
    expired: z.int(),
    cancelled: z.int(),
    /** Buyers holding units, pending orders included. */
    buyers: z.int(),
    /** Units of ended orders (expired, cancelled, failed) back on sale. */
    returnedUnits: z.int(),
  }),
  /** Every state, by orders and units. */
  states: z.record(OrderStatus, StateCount),
  /** Outbox records not yet in D1. */
  pending: z.int(),
  /** Ended orders whose units are not back in Redis yet (the sweep retries them). */
  returnsPending: z.int(),
  refundsDue: z.int(),
  oversold: z.int(),
  reconciled: z.boolean(),
  /** When the sale's Redis figures were archived to D1 and its keys removed; null while Redis holds them. */
  archivedAt: z.nullable(z.iso.datetime()),
  /**
   * The sale's largest Redis key (MEMORY USAGE) and its share of REDIS_MAX_RECORD_BYTES, the
   * most Upstash lets one key hold before it refuses writes to it; null once archived.
   */
  largestKey: z.nullable(z.object({ key: z.string(), bytes: z.int(), share: z.number() })),
  /** What needs an operator's eye: a key past half the record limit. */
  warnings: z.array(z.string()),
});
export type ReconciliationReport = z.infer<typeof ReconciliationReport>;

/**
 * Checkout outcomes per second (lua/checkout.lua and the isolates count them; see
 * saleStatsKey): each second that saw any, with a count per code, OK for accepted and any
 * other code for a refusal. Seconds without outcomes are left out.
 */
export const OutcomeSeries = z.object({
  /** The window, epoch seconds, both ends included. */
  from: z.int(),
  to: z.int(),
  points: z.array(z.object({ at: z.int(), counts: z.record(z.string(), z.int()) })),
});
export type OutcomeSeries = z.infer<typeof OutcomeSeries>;

/** GET /admin/sales/:saleId/stats: what the admin console polls. */
export const SaleStats = z.object({ sale: AdminSaleView, series: OutcomeSeries, report: ReconciliationReport });
export type SaleStats = z.infer<typeof SaleStats>;

/** A deny rule as the admin API answers it. */
export const DenyRuleView = z.object({
  id: z.string(),
  kind: z.enum(["ip", "user", "user-agent"]),
  value: z.string(),
  note: z.string(),
  /** null: until deleted. */
  expiresAt: z.nullable(z.iso.datetime()),
  createdAt: z.iso.datetime(),
});
export type DenyRuleView = z.infer<typeof DenyRuleView>;

/** GET and DELETE /admin/deny-rules: every rule, newest first. */
export const DenyRuleList = z.object({ rules: z.array(DenyRuleView) });
export type DenyRuleList = z.infer<typeof DenyRuleList>;

/** GET /api/config: what a storefront page needs to know about this deployment. */
export const StorefrontConfig = z.object({
  /** POST /api/dev/login mints tokens (DEV_LOGIN, local use only). */
  devLogin: z.boolean(),
  /** ALLOWED_ORIGINS: shops that may call the API cross-origin and hand the page a token. */
  allowedOrigins: z.array(z.string()),
  /** TURNSTILE_SITE_KEY: the widget's site key for sales with humanCheck; null when unset. */
  turnstileSiteKey: z.nullable(z.string()),
});
export type StorefrontConfig = z.infer<typeof StorefrontConfig>;

/** POST /api/dev/login. */
export const DevLoginToken = z.object({ token: z.string(), userId: z.string(), expiresAt: z.iso.datetime() });
export type DevLoginToken = z.infer<typeof DevLoginToken>;

/** POST /webhooks/payments: what applying the event did. */
export const WebhookReceived = z.object({
  received: z.literal(true),
  outcome: z.enum(["paid", "refund_due", "ignored", "duplicate"]),
});
export type WebhookReceived = z.infer<typeof WebhookReceived>;

/** GET /healthz. */
export const Health = z.object({ ok: z.literal(true) });
