// What the API accepts: every request body, path parameter and query it validates. The
// routes validate with these schemas, and the API's documentation is generated from them.

import * as z from "zod/mini";
import {
  CODE_BATCH_LIMITS,
  CURRENCY_PATTERN,
  DEFAULT_CURRENCY,
  DEFAULT_PAYMENT_WINDOW_SEC,
  DEV_USER_ID_PATTERN,
  LAB_SALE_ID_PATTERN,
  LANE_NAME_PATTERN,
  MAX_ADMISSION,
  MAX_DESCRIPTION_LENGTH,
  MAX_IMAGE_URL_LENGTH,
  MAX_LANES,
  MAX_PAYMENT_WINDOW_SEC,
  MAX_PER_USER_LIMIT,
  MAX_PRICE,
  MAX_STOCK,
  MAX_USER_ID_LENGTH,
  NOTICE_MAX_CHARS,
  ORDER_ID_PATTERN,
  QUEUE_LIMITS,
  SALE_ID_PATTERN,
  SALE_WINDOW,
  VARIANT_COUNT,
  VARIANT_ID_PATTERN,
} from "./limits";
import { isLoopbackHost } from "./loopback";
import { isOrderId } from "./order-id";
import { LONE_SURROGATE } from "./user-id";
import "./zod-english";

export const SaleIdParam = z.object({
  saleId: z.string().check(z.regex(SALE_ID_PATTERN, "the sale id must be a positive integer")),
});

export const OrderIdParam = z.object({
  orderId: z.string().check(z.refine(isOrderId, "the order id must be a decimal 64-bit integer")),
});

export const LabSaleIdParam = z.object({
  labSaleId: z.string().check(z.regex(LAB_SALE_ID_PATTERN, "the lab sale id must be a lowercase UUID")),
});

const Admission = z.strictObject({
  rate: z.int().check(z.minimum(1), z.maximum(MAX_ADMISSION.rate)),
  burst: z.int().check(z.minimum(1), z.maximum(MAX_ADMISSION.burst)),
});

/** The waiting-room modes: off (first come, first served), fifo (arrival order), random (a verifiable draw). */
export const QUEUE_MODES = ["off", "fifo", "random"] as const;
export type QueueMode = (typeof QUEUE_MODES)[number];

const bounded = ({ min, max }: { min: number; max: number }) => z.int().check(z.minimum(min), z.maximum(max));

/** A sale's waiting room as create and edit take it; fields left out keep their value (or the default). */
const QueueSettings = z.strictObject({
  mode: z.optional(z.enum(QUEUE_MODES)),
  /** Joining opens this many seconds before startsAt. */
  prequeueSec: z.optional(bounded(QUEUE_LIMITS.prequeueSec)),
  /** Places admitted per second once the sale starts. */
  admitPerSec: z.optional(bounded(QUEUE_LIMITS.admitPerSec)),
  /** How long an admitted buyer's pass is valid. */
  passTtlSec: z.optional(bounded(QUEUE_LIMITS.passTtlSec)),
});
export type QueueSettings = z.infer<typeof QueueSettings>;

/**
 * A public randomness beacon's future round (drand's HTTP API: GET <url>/public/<round>
 * answers {round, randomness}): https, or http to this machine for the local stand-in.
 */
const Beacon = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: "beacon.url must be an http or https URL" }).check(
    z.maxLength(500),
    z.refine(
      (url) => url.startsWith("https:") || isLoopbackHost(new URL(url).host),
      "beacon.url must be https (http only to this machine)",
    ),
  ),
  round: z.int().check(z.minimum(1), z.maximum(Number.MAX_SAFE_INTEGER)),
});

/** A sale sold by draw: entries between opensAt and closesAt (at most startsAt), winners drawn then, paying from startsAt. */
export const DrawSettings = z.strictObject({
  opensAt: z.iso.datetime({ offset: true }),
  closesAt: z.iso.datetime({ offset: true }),
  beacon: z.optional(Beacon),
});
export type DrawSettings = z.infer<typeof DrawSettings>;

/**
 * What is wrong with a sale's draw, if anything: entries open before they close, close no
 * later than the sale starts, and a draw sale has no waiting room (the draw replaces the race).
 */
export function drawProblem(
  draw: { opensAt: number; closesAt: number } | null | undefined,
  startsAt: number,
  queueMode: QueueMode | undefined,
): { message: string; field: string } | undefined {
  if (!draw) return undefined;
  if (!(draw.closesAt > draw.opensAt)) return { message: "closesAt must be after opensAt", field: "draw.closesAt" };
  if (draw.closesAt > startsAt) return { message: "closesAt must be at or before startsAt", field: "draw.closesAt" };
  if (queueMode !== undefined && queueMode !== "off")
    return { message: "a sale sold by draw has no waiting room", field: "queue.mode" };
  return undefined;
}

const VariantId = z.string().check(z.regex(VARIANT_ID_PATTERN, "a variant id is 1 to 32 letters, digits or . _ -"));

/** A presale lane before the public one: its name, when it opens, and optionally its own allotment. */
const Lane = z.strictObject({
  name: z.string().check(z.regex(LANE_NAME_PATTERN, "a lane's name is 1 to 32 of a-z, 0-9 and -")),
  startsAt: z.iso.datetime({ offset: true }),
  /** Units the lane may sell (what earlier lanes left unsold comes on top); absent: no cap of its own. */
  stock: z.optional(z.int().check(z.minimum(1), z.maximum(MAX_STOCK))),
  /** Per variant: units of each the lane may sell. */
  variants: z.optional(z.record(VariantId, z.int().check(z.minimum(1), z.maximum(MAX_STOCK)))),
});
export type LaneInput = z.infer<typeof Lane>;
const Lanes = z.array(Lane).check(z.maxLength(MAX_LANES));

/**
 * What is wrong with a sale's lanes, if anything: in start order, each name once, all before the
 * public start (by at most the longest sale), naming only the sale's variants, and in a sale sold
 * by draw (`drawClosesAt`) after its entries close (each lane's winners are offered from its start).
 */
export function lanesProblem(
  lanes: readonly { name: string; startsAt: number; variants?: Record<string, number> | null }[],
  startsAt: number,
  variantIds: readonly string[] | undefined,
  drawClosesAt: number | undefined,
): { message: string; field: string } | undefined {
  if (lanes.length === 0) return undefined;
  if (drawClosesAt !== undefined && drawClosesAt > (lanes[0] as { startsAt: number }).startsAt)
    return {
      message: "a draw with presale lanes closes its entries at or before the first lane's start",
      field: "draw.closesAt",
    };
  for (const [i, lane] of lanes.entries()) {
    if (lanes.findIndex((l) => l.name === lane.name) !== i)
      return { message: `lane ${lane.name} is named twice`, field: "lanes" };
    if (i > 0 && !(lane.startsAt > (lanes[i - 1] as { startsAt: number }).startsAt))
      return { message: "lanes come in start order, each after the one before", field: `lanes.${i}.startsAt` };
    if (!(lane.startsAt < startsAt))
      return { message: "a lane starts before the sale's public start", field: `lanes.${i}.startsAt` };
    if (startsAt - lane.startsAt > SALE_WINDOW.maxLengthMs)
      return { message: "a lane starts at most 30 days before the public start", field: `lanes.${i}.startsAt` };
    const unknown = Object.keys(lane.variants ?? {}).find((v) => !variantIds?.includes(v));
    if (unknown !== undefined)
      return { message: `lane ${lane.name} names variant ${unknown}, which the sale has not`, field: `lanes.${i}.variants` };
  }
  return undefined;
}

// POST /admin/sales
/** Names and descriptions reach Redis and D1 alike, so they must read the same in both. */
const wellFormed = z.refine<string>((text) => !LONE_SURROGATE.test(text), "must be well-formed Unicode (no lone surrogate)");
const Name = z.string().check(z.trim(), z.minLength(1), z.maxLength(200), wellFormed);
const Stock = z.int().check(z.minimum(1), z.maximum(MAX_STOCK));
const Description = z.string().check(z.trim(), z.maxLength(MAX_DESCRIPTION_LENGTH), wellFormed);
/** https only: the storefront shows it on its own pages. */
const ImageUrl = z.url({ protocol: /^https$/, error: "imageUrl must be an https URL" }).check(z.maxLength(MAX_IMAGE_URL_LENGTH));

/**
 * What is wrong with a sale's window, if anything: it ends after it starts, starts no earlier
 * than a day ago and at most a year ahead, and lasts at most 30 days. Shared by create and edit.
 */
export function windowProblem(
  startsAt: number,
  endsAt: number,
  now = Date.now(),
): { message: string; field: string } | undefined {
  if (!(endsAt > startsAt)) return { message: "endsAt must be after startsAt", field: "endsAt" };
  if (startsAt < now - SALE_WINDOW.maxStartAgoMs) return { message: "startsAt must be at most a day ago", field: "startsAt" };
  if (startsAt > now + SALE_WINDOW.maxStartAheadMs)
    return { message: "startsAt must be at most a year from now", field: "startsAt" };
  if (endsAt - startsAt > SALE_WINDOW.maxLengthMs) return { message: "a sale lasts at most 30 days", field: "endsAt" };
  return undefined;
}

const Price = z.int().check(z.minimum(0), z.maximum(MAX_PRICE));

/** A variant as create and edit take it: a size, a colour, a tier, with its own stock. */
const Variant = z.strictObject({
  id: VariantId,
  label: Name,
  stock: Stock,
  /** Minor units; absent: the sale's price. */
  price: z.optional(Price),
});
export type VariantInput = z.infer<typeof Variant>;

/** Each id once. */
const uniqueIds = z.refine<VariantInput[]>(
  (variants) => new Set(variants.map((v) => v.id)).size === variants.length,
  "variant ids must be unique",
);

/** The variants' stocks add up to the sale's; a sale of MAX_STOCK units at most. */
const variantsStock = (variants: VariantInput[]) => variants.reduce((sum, v) => sum + v.stock, 0);

export const CreateSaleBody = z
  .strictObject({
    name: Name,
    /** Required without variants; with them it is their sum and must not be sent. */
    stock: z.optional(Stock),
    variants: z.optional(z.array(Variant).check(z.minLength(VARIANT_COUNT.min), z.maxLength(VARIANT_COUNT.max), uniqueIds)),
    startsAt: z.iso.datetime({ offset: true }),
    endsAt: z.iso.datetime({ offset: true }),
    admission: z.optional(Admission),
    description: z._default(Description, ""),
    imageUrl: z.optional(ImageUrl),
    /** Minor units (cents); what one unit costs. */
    price: z._default(Price, 0),
    currency: z._default(z.string().check(z.regex(CURRENCY_PATTERN, "currency must be 3 upper-case letters")), DEFAULT_CURRENCY),
    /** Seconds a settled order waits for its payment before its units go back on sale; 0: no payment step. */
    paymentWindowSec: z._default(z.int().check(z.minimum(0), z.maximum(MAX_PAYMENT_WINDOW_SEC)), DEFAULT_PAYMENT_WINDOW_SEC),
    /** Units one buyer may hold in this sale. */
    perUserLimit: z._default(z.int().check(z.minimum(1), z.maximum(MAX_PER_USER_LIMIT)), 1),
    /** The waiting room; absent: off. */
    queue: z.optional(QueueSettings),
    /** Checkout (and the queue join) ask for a Turnstile token in the Human-Check header. */
    humanCheck: z._default(z.boolean(), false),
    /** Sold by draw; absent or null: first come, first served (or by the waiting room). */
    draw: z._default(z.nullable(DrawSettings), null),
    /** Presale lanes before the public start, in start order (docs/lanes.md). */
    lanes: z._default(Lanes, []),
  })
  .check(
    z.superRefine((s, ctx) => {
      const problem =
        windowProblem(Date.parse(s.startsAt), Date.parse(s.endsAt)) ??
        drawProblem(
          s.draw && { opensAt: Date.parse(s.draw.opensAt), closesAt: Date.parse(s.draw.closesAt) },
          Date.parse(s.startsAt),
          s.queue?.mode,
        ) ??
        lanesProblem(
          s.lanes.map((l) => ({ ...l, startsAt: Date.parse(l.startsAt) })),
          Date.parse(s.startsAt),
          s.variants?.map((v) => v.id),
          s.draw ? Date.parse(s.draw.closesAt) : undefined,
        );
      if (problem) ctx.issues.push({ code: "custom", message: problem.message, path: [problem.field], input: s });
      const stockProblem = createStockProblem(s);
      if (stockProblem) ctx.issues.push({ code: "custom", message: stockProblem.message, path: [stockProblem.field], input: s });
    }),
  );

/** What is wrong with a create's stock: sent beside variants, or missing without them; over MAX_STOCK in sum. */
function createStockProblem(s: { stock?: number; variants?: VariantInput[] }): { message: string; field: string } | undefined {
  if (s.variants === undefined) return s.stock === undefined ? { message: "stock is required", field: "stock" } : undefined;
  if (s.stock !== undefined) return { message: "stock must not be sent with variants: it is their sum", field: "stock" };
  if (variantsStock(s.variants) > MAX_STOCK)
    return { message: `the variants' stocks add up to more than ${MAX_STOCK}`, field: "variants" };
  return undefined;
}

/** The sale's stock as a create asks for it: the sum of its variants', or its own. */
export const createdStock = (body: { stock?: number; variants?: VariantInput[] }): number =>
  body.variants ? variantsStock(body.variants) : (body.stock ?? 0);
export type CreateSaleBody = z.infer<typeof CreateSaleBody>;

/**
 * PATCH /admin/sales/:saleId: what may change. Name, description and image at any time; the
 * window, the admission and the human check only before the sale starts; stock only upward, ever.
 */
export const UpdateSaleBody = z
  .strictObject({
    name: z.optional(Name),
    description: z.optional(Description),
    /** null takes the image away. */
    imageUrl: z.optional(z.nullable(ImageUrl)),
    startsAt: z.optional(z.iso.datetime({ offset: true })),
    endsAt: z.optional(z.iso.datetime({ offset: true })),
    admission: z.optional(Admission),
    /** A sale without variants only. */
    stock: z.optional(Stock),
    /**
     * A sale with variants only: variants to change (by id: label, price before the start, stock
     * upward) or to add (before the start); those not listed stay as they are.
     */
    variants: z.optional(z.array(Variant).check(z.minLength(1), z.maxLength(VARIANT_COUNT.max), uniqueIds)),
    /** Changes only before joining opens (startsAt - prequeueSec). */
    queue: z.optional(QueueSettings),
    humanCheck: z.optional(z.boolean()),
    /** Changes only before entries open (draw.opensAt); null: no longer a draw. */
    draw: z.optional(z.nullable(DrawSettings)),
    /** Every lane the sale will have; changes only before the first of them (or the sale) starts. */
    lanes: z.optional(Lanes),
  })
  .check(z.refine((s) => Object.keys(s).length > 0, "nothing to change"));
export type UpdateSaleBody = z.infer<typeof UpdateSaleBody>;

/** An operator's notice on a sale's pages: one short line, as the sale's names are. */
const Notice = z.string().check(z.trim(), z.minLength(1), z.maxLength(NOTICE_MAX_CHARS), wellFormed);

/** POST /admin/sales/:saleId/queue/pause and /resume; the body is optional. message: the sale's notice from now. */
export const AdmissionHoldBody = z.strictObject({ message: z.optional(Notice) });
export type AdmissionHoldBody = z.infer<typeof AdmissionHoldBody>;

/** PATCH /admin/sales/:saleId/queue: the ceiling on places let in per second, also while the sale is live. */
export const AdmitRateBody = z.strictObject({
  admitPerSec: bounded(QUEUE_LIMITS.admitPerSec),
});
export type AdmitRateBody = z.infer<typeof AdmitRateBody>;

/** PUT /admin/sales/:saleId/notice: what every waiting and sale page of the sale shows; null takes it down. */
export const NoticeBody = z.strictObject({ message: z.nullable(Notice) });
export type NoticeBody = z.infer<typeof NoticeBody>;

const denyRuleFields = {
  note: z._default(z.string().check(z.maxLength(500)), ""),
  /** The rule stops matching then; absent: until deleted. */
  expiresAt: z.optional(z.iso.datetime({ offset: true })),
};

/** POST /admin/deny-rules: a caller to refuse quietly. */
export const DenyRuleBody = z.discriminatedUnion("kind", [
  z.strictObject({
    /** A client address (CF-Connecting-IP) or a range of them; an IPv6 one covers at least the caller's ADDRESS_PREFIX_V6 prefix. */
    kind: z.literal("ip"),
    /** An IPv4 or IPv6 address, or a CIDR range such as 203.0.113.0/24 or 2001:db8::/48. */
    value: z.union([z.ipv4(), z.ipv6(), z.cidrv4(), z.cidrv6()]),
    ...denyRuleFields,
  }),
  z.strictObject({
    /** user: a user id, exactly; user-agent: a part of it, any case. */
    kind: z.enum(["user", "user-agent"]),
    value: z.string().check(z.trim(), z.minLength(1), z.maxLength(256)),
    ...denyRuleFields,
  }),
]);
export type DenyRuleBody = z.infer<typeof DenyRuleBody>;

/** DELETE /admin/deny-rules/:ruleId. */
export const DenyRuleIdParam = z.object({
  ruleId: z.string().check(z.regex(/^[1-9]\d{0,14}$/, "the rule id must be a positive integer")),
});

/** GET /api/sales?cursor=: the next page, as the previous page's nextCursor gave it (other parameters are ignored). */
export const CatalogQuery = z.object({
  // Checked by the route (signature and expiry), which answers 400 INVALID_CURSOR.
  cursor: z.optional(z.string()),
});

/** POST /api/sales/:saleId/checkout; the body is optional (one unit of a sale without variants). */
export const CheckoutBody = z.strictObject({
  /** Required for a sale with variants; "default" (or none) for a sale without. */
  variant: z.optional(VariantId),
  quantity: z._default(z.int().check(z.minimum(1), z.maximum(MAX_PER_USER_LIMIT)), 1),
});
export type CheckoutBody = z.infer<typeof CheckoutBody>;

/** POST /api/sales/:saleId/entries: the variant (required for a sale with variants) and the units an entry asks for. */
export const EntryBody = CheckoutBody;
export type EntryBody = CheckoutBody;

/** GET /api/sales/:saleId/draw/entries?cursor=: the page (a chunk of the tree) to read, from the last page's next. */
export const DrawEntriesQuery = z.object({
  cursor: z.optional(z.string().check(z.regex(/^\d{1,7}$/, "cursor must be a next this API gave"))),
});

/**
 * GET /api/sales/:saleId/queue: the ticket POST .../queue gave. Required; whatever it holds
 * is read as a ticket, so a malformed one (empty, too long, not base64url...) is refused as
 * any ticket this sale did not give: 403 QUEUE_TICKET_INVALID.
 */
export const QueueTicketHeader = z.object({ "queue-ticket": z.string() });

/** GET /admin/sales/:saleId/queue/places?from=: the first place of the page (1 by default). */
/** GET /admin/sales/:saleId/queue and GET /api/sales/:saleId/queue/draw: which line, a presale lane's own (docs/lanes.md) or, without, the public one. */
export const QueueLineQuery = z.object({
  lane: z.optional(z.string().check(z.regex(LANE_NAME_PATTERN, "a lane's name is 1 to 32 of a-z, 0-9 and -"))),
});

/** GET /api/sales/:saleId/queue/draw/places?cursor=&lane=: the line, and the page to read from the last page's next. */
export const QueueDrawPlacesQuery = z.object({ ...QueueLineQuery.shape, ...DrawEntriesQuery.shape });

export const QueuePlacesQuery = z.object({
  ...QueueLineQuery.shape,
  from: z.optional(z.string().check(z.regex(/^[1-9][0-9]{0,8}$/, "from must be a place, 1 or more"))),
});

/** POST /api/orders/:orderId/pay */
export const PayBody = z.strictObject({ paymentToken: z.string().check(z.minLength(1), z.maxLength(200)) });
export type PayBody = z.infer<typeof PayBody>;

/** POST /webhooks/payments: an event of an asynchronous payment provider, signed. */
export const PaymentEvent = z.object({
  id: z.string().check(z.minLength(1), z.maxLength(200)),
  type: z.enum(["payment.succeeded", "payment.failed"]),
  orderId: z.string().check(z.regex(ORDER_ID_PATTERN)),
  amount: z.int().check(z.minimum(0)),
  currency: z.string().check(z.regex(CURRENCY_PATTERN)),
  paymentRef: z.optional(z.string().check(z.maxLength(200))),
});
export type PaymentEvent = z.infer<typeof PaymentEvent>;

/** POST /api/dev/login: the name to mint a local token for (DEV_LOGIN only). */
export const DevLoginBody = z.strictObject({
  userId: z.string().check(z.trim(), z.regex(DEV_USER_ID_PATTERN, "1 to 64 letters, digits or _ . @ -")),
});

/** POST /lab/sales */
export const CreateLabSaleBody = z.strictObject({
  stock: Stock,
  /**
   * An emulated round trip (ms) the durable-object copies wait on every RPC (one checkout,
   * or a merged batch): the hop from a buyer's isolate to the object's one location, which
   * one machine does not have.
   */
  objectHopMs: z._default(z.int().check(z.minimum(0), z.maximum(1_000)), 0),
});

/** The read path's cache guards, each of which a lab experiment may turn off. */
export const CACHE_GUARDS = ["bloom", "jitter", "rebuildOnce", "setIfNewer"] as const;

/**
 * POST /lab/read-path: `views` page views, spread over `isolates` isolates (each with its own
 * memory; by default one per view), with some cache guards off, D1's queries counted. The
 * scenario sets the cache up first: cold (evicted), warm (fresh), stale (just past its
 * logical expiry, or gone where entries expire for good), absent (ids that never existed).
 */
export const ReadPathExperimentBody = z.strictObject({
  page: z.enum(["sale", "catalog"]),
  scenario: z.enum(["cold", "warm", "stale", "absent"]),
  saleId: z.optional(z.string().check(z.regex(SALE_ID_PATTERN, "saleId must be a sale's id"))),
  views: z.int().check(z.minimum(1), z.maximum(10_000)),
  isolates: z.optional(z.int().check(z.minimum(1), z.maximum(10_000))),
  off: z._default(z.array(z.enum(CACHE_GUARDS)), []),
});
export type ReadPathExperimentBody = z.infer<typeof ReadPathExperimentBody>;

/** POST /admin/sales/:saleId/lanes/:lane/codes and DELETE /admin/sales/:saleId/codes/:batchId. */
export const LaneParam = z.object({
  saleId: z.string().check(z.regex(SALE_ID_PATTERN, "the sale id must be a positive integer")),
  lane: z.string().check(z.regex(LANE_NAME_PATTERN, "a lane's name is 1 to 32 of a-z, 0-9 and -")),
});
export const BatchIdParam = z.object({
  saleId: z.string().check(z.regex(SALE_ID_PATTERN, "the sale id must be a positive integer")),
  batchId: z.string().check(z.regex(/^cb_[0-9a-f]{16}$/, "the batch id must be one this API gave")),
});

/** A batch of access codes for a lane: how many, how many uses each, until when. */
export const CodeBatchBody = z.strictObject({
  count: z.int().check(z.minimum(CODE_BATCH_LIMITS.count.min), z.maximum(CODE_BATCH_LIMITS.count.max)),
  uses: z._default(z.int().check(z.minimum(CODE_BATCH_LIMITS.uses.min), z.maximum(CODE_BATCH_LIMITS.uses.max)), 1),
  expiresAt: z.optional(z.iso.datetime({ offset: true })),
});
export type CodeBatchBody = z.infer<typeof CodeBatchBody>;

/** POST /admin/sales/:saleId/bypass: the user a staff pass is for. */
export const BypassBody = z.strictObject({
  userId: z.string().check(z.minLength(1), z.maxLength(MAX_USER_ID_LENGTH)),
});
