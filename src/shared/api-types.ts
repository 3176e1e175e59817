// What the API answers with, as schemas: the Worker imports only the inferred types (no
// bundle cost), while the tests check real responses against the schemas and the API's
// documentation is generated from them. The Node-side client reads the same shapes.
import * as z from "zod/mini";
import { FUNNEL_STEPS } from "./funnel";
import { DeliveryView } from "./order-events";
import { ORDER_STATUSES } from "./order-status";
import "./zod-english";

/** Every error the API returns has this one shape. */
export const ErrorBody = z.object({ error: z.object({ code: z.string(), message: z.string() }) });
export type ErrorBody = z.infer<typeof ErrorBody>;

/** cancelled and ended are final; paused may be resumed; live, sold_out and upcoming follow the clock and the stock. */
export const SaleStatus = z.enum(["upcoming", "live", "sold_out", "paused", "ended", "cancelled"]);
export type SaleStatus = z.infer<typeof SaleStatus>;

/**
 * A sale's waiting room. `seedCommitment`: the SHA-256 (hex) of the seed that orders a
 * random sale's pre-queue, published before joining opens (null unless random); `seed`: that
 * seed (hex), revealed once the sale has ended, so anyone can recompute every place.
 */
export const QueueView = z.object({
  mode: z.enum(["off", "fifo", "random"]),
  prequeueSec: z.int(),
  admitPerSec: z.int(),
  passTtlSec: z.int(),
  seedCommitment: z.nullable(z.string()),
  seed: z.nullable(z.string()),
});
export type QueueView = z.infer<typeof QueueView>;

/** One variant of a sale (a size, a colour, a tier) with its live remaining stock. */
export const VariantView = z.object({
  id: z.string(),
  label: z.string(),
  /** Minor units per unit: the variant's own price, or the sale's. */
  price: z.int(),
  stock: z.int(),
  remaining: z.int(),
  soldOut: z.boolean(),
});
export type VariantView = z.infer<typeof VariantView>;

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
  /** What the operator tells everyone on the sale's pages right now (at most 280 characters); null: nothing. */
  notice: z.nullable(z.string()),
  queue: QueueView,
  /** A sale sold by draw (docs/draws.md): when entries open and close, and the beacon mixed into the shuffle. */
  draw: z.nullable(
    z.object({
      opensAt: z.string(),
      closesAt: z.string(),
      beacon: z.optional(z.object({ url: z.string(), round: z.int() })),
    }),
  ),
  /** In the admin's order; a sale created without variants has one, "default", with the sale's stock. */
  variants: z.array(VariantView),
  /**
   * Presale lanes before startsAt, in start order (docs/lanes.md): from each one's startsAt until
   * the next's (the last: until the sale's startsAt), buyers with a code of it or an earlier lane
   * buy. stock: its own allotment (null: none); remaining: what it may still sell, its allotment
   * with what the lanes before it left unsold, never more than the sale's remaining.
   */
  lanes: z.array(z.object({ name: z.string(), startsAt: z.iso.datetime(), stock: z.nullable(z.int()), remaining: z.int() })),
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
  /**
   * D1 holds this version but Redis has not applied it yet (or Redis cannot say): buyers are
   * still served the version before it. It is pushed again by itself (the jobs queue, then the
   * cron) until they agree.
   */
  syncPending: z.boolean(),
});
export type AdminSaleView = z.infer<typeof AdminSaleView>;

/** POST /api/sales/:saleId/checkout, 202. */
export const CheckoutAccepted = z.object({
  /** The order's public id (GET /api/orders/{orderId} follows it). */
  orderId: z.string(),
  status: z.literal("pending"),
  quantity: z.int(),
  /** The variant reserved: "default" for a sale without variants. */
  variant: z.string(),
});
export type CheckoutAccepted = z.infer<typeof CheckoutAccepted>;

/** An order's state (order-status.ts says what each means). */
export const OrderStatus = z.enum(ORDER_STATUSES);
export type OrderStatus = z.infer<typeof OrderStatus>;

/** GET /api/orders/:orderId, and the answer of pay and cancel. */
export const OrderView = z.object({
  /** The order's public id: a decimal integer from 2^63 to 2^64 - 1 that tells nothing of when it was made. */
  orderId: z.string(),
  /** A short reference for people, "7KQ4-M2XD" (Crockford base32, from the order id): a sale's order list in the console finds the order by it. */
  reference: z.string(),
  saleId: z.string(),
  /** The sale's name (what was bought). */
  saleName: z.string(),
  userId: z.string(),
  status: OrderStatus,
  quantity: z.int(),
  /** The variant its units are of: "default" for a sale without variants. */
  variant: z.string(),
  /** The variant's label ("EU 42"); null for a sale without variants. */
  variantLabel: z.nullable(z.string()),
  /** Minor units: price x quantity. */
  amount: z.int(),
  currency: z.string(),
  /** When an order awaiting payment expires; null otherwise. */
  expiresAt: z.nullable(z.iso.datetime()),
  /** A charge for this order landed after it had ended (or twice): it is recorded for refund. */
  refundDue: z.boolean(),
  /**
   * Why a failed order failed; null otherwise. REDIS_ROLLBACK: it was accepted while the sale's
   * live state in Redis had gone back, and the unit (or the buyer's hold) was no longer there to
   * give; SETTLEMENT_FAILED: it could not be recorded. Either way nothing is charged, and the
   * buyer may try again.
   */
  failureReason: z.nullable(z.enum(["REDIS_ROLLBACK", "SETTLEMENT_FAILED"])),
});
export type OrderView = z.infer<typeof OrderView>;

/** GET /api/orders: the caller's orders across sales, newest first; nextCursor (null on the last page) asks for the next. */
export const BuyerOrderPage = z.object({ orders: z.array(OrderView), nextCursor: z.nullable(z.string()) });
export type BuyerOrderPage = z.infer<typeof BuyerOrderPage>;

/** An order in the admin's list: its view, when it was reserved and when it ended (paid, expired, cancelled, failed). */
export const AdminOrderView = z.extend(OrderView, {
  createdAt: z.iso.datetime(),
  closedAt: z.nullable(z.iso.datetime()),
});
export type AdminOrderView = z.infer<typeof AdminOrderView>;

/** GET /admin/sales/:saleId/orders */
export const AdminOrderPage = z.object({ orders: z.array(AdminOrderView), nextCursor: z.nullable(z.string()) });
export type AdminOrderPage = z.infer<typeof AdminOrderPage>;

/** GET /admin/orders/:orderId: the order, its state changes (its order events), pay attempts and event deliveries. */
export const AdminOrderDetail = z.extend(AdminOrderView, {
  /** The W3C traceparent of the request that reserved it (npm run trace follows it); null: settled before traces, or failed. */
  traceparent: z.nullable(z.string()),
  history: z.array(z.object({ eventId: z.string(), type: z.string(), at: z.iso.datetime() })),
  payments: z.array(
    z.object({
      status: z.string(),
      providerRef: z.nullable(z.string()),
      declineReason: z.nullable(z.string()),
      createdAt: z.iso.datetime(),
      updatedAt: z.iso.datetime(),
    }),
  ),
  deliveries: z.array(DeliveryView),
});
export type AdminOrderDetail = z.infer<typeof AdminOrderDetail>;

/** Orders of one state, and the units they hold or held. */
const StateCount = z.object({ orders: z.int(), units: z.int() });

/**
 * GET /admin/sales/:saleId/report: Redis against D1 for one sale. It reconciles when every
 * minted order is in exactly one state, the units Redis holds for buyers are those of the
 * orders that still hold units, D1's sold counter agrees, and every ended order's units are
 * back on sale. Once an ended, settled sale is archived, `redis` holds the figures Redis had
 * when its keys were removed (`archivedAt`), and `loaded` is false.
 */
/** A sale's recovery from a Redis that lost it or came back behind D1 (docs/architecture.md, "Failures and how they heal"). */
export const SaleHealth = z.object({
  /**
   * live: selling from Redis; behind: Redis lost the sale or holds it behind D1, checkouts
   * answer 503 until it is rebuilt; rebuilding: a rebuild from D1 is waiting for its safe
   * point or writing.
   */
  state: z.enum(["live", "behind", "rebuilding"]),
  /** The latest detection, and what noticed it: checkout, settlement or cron. */
  detectedAt: z.nullable(z.iso.datetime()),
  detectedBy: z.nullable(z.string()),
  /** The latest rebuild from D1, and how many there were. */
  rebuiltAt: z.nullable(z.iso.datetime()),
  rebuilds: z.int(),
  /** Orders accepted by a Redis gone back that D1 could not record: failed with REDIS_ROLLBACK. */
  failedByRollback: z.int(),
});
export type SaleHealth = z.infer<typeof SaleHealth>;

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
  health: SaleHealth,
  /**
   * Per variant ("default" alone for a sale without): its stock, what Redis has left of it
   * (null when Redis does not hold the sale), units held (pending, awaiting payment, paid,
   * confirmed) and units of ended orders back on sale. Reconciled requires stock - remaining
   * = held for each.
   */
  variants: z.record(z.string(), z.object({ stock: z.int(), remaining: z.nullable(z.int()), held: z.int(), returned: z.int() })),
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

/** A count for each step of the funnel (src/shared/funnel.ts). */
const FunnelCounts = z.record(z.enum(FUNNEL_STEPS), z.int());

/** GET /admin/sales/:saleId/funnel: one sale's funnel per second (Workers Analytics Engine). */
export const FunnelSeries = z.object({
  saleId: z.string(),
  /** The window, epoch seconds, both ends included. */
  from: z.int(),
  to: z.int(),
  /** The steps in the order a buyer meets them. */
  steps: z.array(z.enum(FUNNEL_STEPS)),
  /** The seconds in which any step was counted. */
  points: z.array(z.object({ at: z.int(), counts: FunnelCounts })),
  /** Each step over the whole window. */
  totals: FunnelCounts,
});
export type FunnelSeries = z.infer<typeof FunnelSeries>;

/** GET /admin/funnel: every sale's funnel over the window. */
export const SalesFunnel = z.object({
  from: z.int(),
  to: z.int(),
  steps: z.array(z.enum(FUNNEL_STEPS)),
  /** The sales with any step counted in the window. */
  sales: z.array(z.object({ saleId: z.string(), counts: FunnelCounts })),
});
export type SalesFunnel = z.infer<typeof SalesFunnel>;

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

/**
 * Where a buyer stands in a sale's waiting room. waiting: not admitted yet; paused: not
 * admitted yet, and nobody is let in until the operator resumes admission (or the sale; every
 * place is kept); admitted: the pass is yours to check out with; sold_out: no unit is left for a
 * place not admitted yet; closed: nothing more will come of this ticket (the sale ended or was
 * cancelled, or your pass bought or expired).
 */
export const QueueState = z.enum(["waiting", "paused", "admitted", "sold_out", "closed"]);
export type QueueState = z.infer<typeof QueueState>;

/** POST /api/sales/:saleId/queue: the ticket to poll with; place is null during a random sale's pre-queue. */
export const QueueJoined = z.object({
  ticket: z.string(),
  place: z.nullable(z.int()),
  state: QueueState,
  retryAfterSec: z.int(),
});
export type QueueJoined = z.infer<typeof QueueJoined>;

/** GET /api/sales/:saleId/queue (Queue-Ticket): the buyer's place and the line's progress. */
export const QueuePosition = z.object({
  place: z.nullable(z.int()),
  /** Every place up to this one has been admitted. */
  admittedThrough: z.int(),
  aheadOfYou: z.int(),
  /**
   * Seconds until your turn, from the pace the line measured (its admissions follow the stock,
   * the no-shows and the returns); null when unknown: before the start, while admission is
   * paused, or while nobody was let in of late.
   */
  estimatedWaitSec: z.nullable(z.int()),
  /** The units will most likely be gone before your turn, counting the no-shows and returns the line expects. */
  likelySoldOutBeforeYou: z.boolean(),
  state: QueueState,
  /** What the operator tells everyone waiting (at most 280 characters); null: nothing. */
  notice: z.nullable(z.string()),
  /** When to poll again. */
  retryAfterSec: z.int(),
  /** Send it as Queue-Pass with the checkout; null until admitted. */
  pass: z.nullable(z.string()),
  passExpiresAt: z.nullable(z.iso.datetime()),
});
export type QueuePosition = z.infer<typeof QueuePosition>;

/** One of an operator's live controls of a sale, as its action log recorded it. */
export const SaleActionView = z.object({
  at: z.iso.datetime(),
  action: z.enum(["pause-admission", "resume-admission", "admission-rate", "queue-enabled", "notice"]),
  /** The notice it set (null: taken down), where it set one. */
  message: z.optional(z.nullable(z.string())),
  /** The rate it set, for admission-rate. */
  admitPerSec: z.optional(z.int()),
  /** The client address the admin token came from. */
  admin: z.string(),
});
export type SaleActionView = z.infer<typeof SaleActionView>;

/**
 * GET /admin/sales/:saleId/queue, and the waiting room's live controls: the waiting room as
 * D1 records it, and its counts as Redis holds them (null while Redis cannot be read: what an
 * operator changed meanwhile is recorded, and reaches Redis by itself once it is back).
 */
export const QueueStats = z.object({
  saleId: z.string(),
  queue: QueueView,
  /** An operator holds admission: nobody more is let in, and every place is kept. */
  paused: z.boolean(),
  /** The notice on the sale's pages; null: none. */
  notice: z.nullable(z.string()),
  /** D1 holds a change Redis has not applied yet (or Redis cannot say): it is pushed again by itself until they agree. */
  syncPending: z.boolean(),
  joined: z.nullable(z.int()),
  /** Joined, not admitted yet. */
  waiting: z.nullable(z.int()),
  admitted: z.nullable(z.int()),
  passesUsed: z.nullable(z.int()),
  passesExpired: z.nullable(z.int()),
  /** Passes still unused a grace after they were given (QUEUE_NO_SHOW_GRACE_SEC): each let the next place in. */
  noShows: z.nullable(z.int()),
  /** Places let in per second over about the last minute (the ceiling is queue.admitPerSec); null: none measured. */
  admittedPerSec: z.nullable(z.number()),
  remaining: z.nullable(z.int()),
  /** The operators' live controls of this sale, newest first (the last 20). */
  actions: z.array(SaleActionView),
});
export type QueueStats = z.infer<typeof QueueStats>;

/** GET /admin/sales/:saleId/queue/places: who holds each place, a page at a time (the console reads it). */
export const QueuePlaces = z.object({
  saleId: z.string(),
  /** Places 1..drawn are a random sale's pre-queue, in draw order; later places joined after the start. */
  drawn: z.int(),
  admittedThrough: z.int(),
  places: z.array(z.object({ place: z.int(), userId: z.string() })),
  /** Ask again with ?from= this for the next page; null on the last. */
  next: z.nullable(z.int()),
});
export type QueuePlaces = z.infer<typeof QueuePlaces>;

/** pending: the sale is not over yet (the seed is secret), or its pre-queue is being published; ready: published. */
export const QueueDrawState = z.enum(["pending", "ready"]);
export type QueueDrawState = z.infer<typeof QueueDrawState>;

/** GET /api/sales/:saleId/queue/draw: a random sale's pre-queue as anyone may check it (docs/api.md, "Verifying a draw"). */
export const QueueDrawView = z.object({
  saleId: z.string(),
  state: QueueDrawState,
  /** SHA-256 of the seed, published at the sale's creation. */
  seedCommitment: z.nullable(z.string()),
  /** The seed, once the sale is over (ended or cancelled). */
  seed: z.nullable(z.string()),
  /** The pre-queue's places (1..drawn), once published. */
  drawn: z.nullable(z.int()),
  /** The Merkle root over every place's leaf (hex), once published. */
  placesRoot: z.nullable(z.string()),
  publishedAt: z.nullable(z.iso.datetime()),
});
export type QueueDrawView = z.infer<typeof QueueDrawView>;

/** One published place: its holder's draw key, HMAC-SHA256(seed, user id), hex. */
export const QueueDrawPlace = z.object({ place: z.int(), drawKey: z.string() });
export type QueueDrawPlace = z.infer<typeof QueueDrawPlace>;

/** GET /api/sales/:saleId/queue/draw/places: a page of the published places, in place order. */
export const QueueDrawPlacesPage = z.object({ places: z.array(QueueDrawPlace), next: z.nullable(z.string()) });
export type QueueDrawPlacesPage = z.infer<typeof QueueDrawPlacesPage>;

/** GET /healthz. */
export const Health = z.object({ ok: z.literal(true) });
export type Health = z.infer<typeof Health>;

/** An entry's standing in a draw (docs/draws.md). */
export const EntryStatus = z.enum(["entered", "withdrawn", "selected", "waitlisted", "not_selected"]);
export type EntryStatus = z.infer<typeof EntryStatus>;

/** POST /api/sales/:saleId/entries: the entry, and the receipt only the entrant holds. */
export const EntryAnswer = z.object({
  entry: z.object({
    status: EntryStatus,
    variant: z.string(),
    quantity: z.int(),
    enteredAt: z.string(),
    /** The presale lane whose draw the entry is in (entered with its code); absent: the public draw. */
    lane: z.optional(z.string()),
  }),
  /** 32 hex characters: with the entrant's user id it makes the leaf's entrant hash. */
  receipt: z.string(),
});
export type EntryAnswer = z.infer<typeof EntryAnswer>;

/** An entry's inclusion in the committed tree (RFC 6962's audit path), checked against the draw's entriesRoot. */
export const InclusionProof = z.object({
  leafHash: z.string(),
  leafIndex: z.int(),
  treeSize: z.int(),
  /** Sibling hashes from the leaf up, hex. */
  path: z.array(z.string()),
});
export type InclusionProof = z.infer<typeof InclusionProof>;

/** GET /api/sales/:saleId/entries/mine. */
export const MyEntry = z.object({
  status: EntryStatus,
  variant: z.string(),
  quantity: z.int(),
  receipt: z.string(),
  /** The presale lane whose draw the entry is in; absent: the public draw. */
  lane: z.optional(z.string()),
  /** Once the entries are committed; an entry taken quietly has none. */
  proof: z.optional(InclusionProof),
  /** The order the draw offered this entry. */
  orderId: z.optional(z.string()),
});
export type MyEntry = z.infer<typeof MyEntry>;

export const DrawState = z.enum(["upcoming", "open", "closed", "drawing", "drawn"]);
export type DrawState = z.infer<typeof DrawState>;

/** GET /api/sales/:saleId/draw: what anyone may check the draw against. */
export const DrawView = z.object({
  saleId: z.string(),
  state: DrawState,
  opensAt: z.string(),
  closesAt: z.string(),
  /** Entries standing (withdrawn ones not counted), committed ones once the entries are. */
  entries: z.int(),
  /** The Merkle root of the committed entries (hex), once committed. */
  entriesRoot: z.nullable(z.string()),
  committedAt: z.nullable(z.string()),
  /** SHA-256 of the seed, published at the sale's creation. */
  seedCommitment: z.nullable(z.string()),
  /** The seed, once drawn. */
  seed: z.nullable(z.string()),
  /** The beacon named before the close, and its round's randomness once the draw read it. */
  beacon: z.nullable(z.object({ url: z.string(), round: z.int(), randomness: z.nullable(z.string()) })),
  drawnAt: z.nullable(z.string()),
  /** Per variant: its stock, its entries (standing ones while entries are open, committed ones after), and the results once drawn. */
  variants: z.array(z.object({ id: z.string(), stock: z.int(), entries: z.int(), selected: z.int(), waitlisted: z.int() })),
  /**
   * The presale lanes, each drawn apart before the public draw from its own allotment (in all
   * and per variant; null: none of its own) and offered from its start ([] for a sale without).
   */
  lanes: z.array(
    z.object({
      name: z.string(),
      startsAt: z.string(),
      stock: z.nullable(z.int()),
      variants: z.nullable(z.record(z.string(), z.int())),
    }),
  ),
});
export type DrawView = z.infer<typeof DrawView>;

/** One committed entry as the public list shows it, in tree order. */
export const DrawLeaf = z.object({
  index: z.int(),
  leafHash: z.string(),
  entrant: z.string(),
  variant: z.string(),
  quantity: z.int(),
  /** A sale with presale lanes only: the lane whose draw the entry is in, "" for the public draw (part of the leaf). */
  lane: z.optional(z.string()),
  /** Once drawn. */
  result: z.optional(z.enum(["selected", "waitlisted", "not_selected"])),
});
export type DrawLeaf = z.infer<typeof DrawLeaf>;

/** GET /api/sales/:saleId/draw/entries: a page of the committed leaves. */
export const DrawEntriesPage = z.object({ leaves: z.array(DrawLeaf), next: z.nullable(z.string()) });
export type DrawEntriesPage = z.infer<typeof DrawEntriesPage>;

/** POST /admin/sales/:saleId/lanes/:lane/codes, 201: the batch's codes, shown this once (only their hashes are kept). */
export const CodeBatchCreated = z.object({
  batchId: z.string(),
  lane: z.string(),
  uses: z.int(),
  expiresAt: z.nullable(z.iso.datetime()),
  codes: z.array(z.string()),
});
export type CodeBatchCreated = z.infer<typeof CodeBatchCreated>;

/** One batch of access codes, as GET /admin/sales/:saleId/codes lists it. */
export const CodeBatchView = z.object({
  batchId: z.string(),
  lane: z.string(),
  /** Codes in the batch. */
  count: z.int(),
  /** Uses each code has. */
  uses: z.int(),
  /** Codes bound to an account by a first use. */
  bound: z.int(),
  /** Uses spent (a return while the lanes are open gives its use back). */
  spent: z.int(),
  revoked: z.boolean(),
  expiresAt: z.nullable(z.iso.datetime()),
  createdAt: z.iso.datetime(),
});
export type CodeBatchView = z.infer<typeof CodeBatchView>;

/** GET /admin/sales/:saleId/codes: every batch, oldest first, and per lane its codes and units. */
export const CodeBatches = z.object({
  batches: z.array(CodeBatchView),
  lanes: z.array(
    z.object({
      name: z.string(),
      /** Codes issued for the lane (revoked ones included), bound and uses spent, over its batches. */
      issued: z.int(),
      bound: z.int(),
      spent: z.int(),
      /** Units bought in the lane's window (orders that came back are not counted). */
      sold: z.int(),
    }),
  ),
});
export type CodeBatches = z.infer<typeof CodeBatches>;

/** POST /admin/sales/:saleId/bypass, 201: a staff pass for the user, usable once as a Queue-Pass. */
export const BypassPass = z.object({ userId: z.string(), pass: z.string(), expiresAt: z.iso.datetime() });
export type BypassPass = z.infer<typeof BypassPass>;

/** GET /admin/sales/:saleId/bypass: the staff passes minted for the sale, latest first. */
export const BypassLog = z.object({
  passes: z.array(
    z.object({ userId: z.string(), expiresAt: z.iso.datetime(), mintedAt: z.iso.datetime(), mintedFrom: z.string() }),
  ),
});
export type BypassLog = z.infer<typeof BypassLog>;
