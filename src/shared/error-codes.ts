// Every error code the API answers, once: its status, whether it carries Retry-After, its
// words, and when it is sent. ApiError (src/http/errors.ts) takes only these codes, so a
// misspelt one is a type error; the API document's error responses are generated from this
// table (`npm run generate`), and a test fails when a code is answered that the route does not
// document.

/** What the Worker needs of a code at run time. */
interface ErrorSpec {
  status: 400 | 401 | 402 | 403 | 404 | 405 | 409 | 412 | 413 | 415 | 422 | 429 | 500 | 503;
  /** What the answer says when its thrower has nothing more precise to say. */
  words: string;
  /** Always sent with Retry-After: this many seconds when its thrower names no other. */
  retryAfterSec?: number;
}

export const ERRORS = {
  BAD_REQUEST: { status: 400, words: "malformed request" },
  VARIANT_REQUIRED: { status: 400, words: "this sale has variants: name one in the body's variant" },
  INVALID_CURSOR: { status: 400, words: "cursor must be a recent nextCursor this API gave" },
  UNAUTHORIZED: { status: 401, words: "a valid bearer token is required" },
  PAYMENT_DECLINED: { status: 402, words: "the payment was declined" },
  CROSS_ORIGIN: { status: 403, words: "admin routes answer their own origin only" },
  CORS_ORIGIN_DENIED: { status: 403, words: "this origin is not in ALLOWED_ORIGINS" },
  HOST_NOT_ALLOWED: { status: 403, words: "this local server answers only to localhost, 127.0.0.1 or [::1]" },
  HUMAN_CHECK_REQUIRED: {
    status: 403,
    words: "this sale asks for the human check: send its token in the Human-Check header",
  },
  HUMAN_CHECK_FAILED: { status: 403, words: "the human check did not pass; complete it again" },
  QUEUE_PASS_REQUIRED: {
    status: 403,
    words: "this sale has a waiting room: check out with the Queue-Pass your place was given",
  },
  QUEUE_PASS_INVALID: { status: 403, words: "this Queue-Pass is not yours, not this sale's, or not admitted" },
  QUEUE_TICKET_INVALID: { status: 403, words: "this Queue-Ticket is not one this sale gave you" },
  ACCESS_CODE_REQUIRED: {
    status: 403,
    words: "this sale is open to code holders only until its public start: send your code in the Access-Code header",
  },
  ACCESS_CODE_INVALID: { status: 403, words: "this access code is not one this sale's open lanes take for you" },
  NOT_FOUND: { status: 404, words: "no such route" },
  SALE_NOT_FOUND: { status: 404, words: "no such sale" },
  VARIANT_NOT_FOUND: { status: 404, words: "this sale has no such variant" },
  ORDER_NOT_FOUND: { status: 404, words: "no such order" },
  NOT_ENTERED: { status: 404, words: "you hold no entry in this draw" },
  ENDPOINT_NOT_FOUND: { status: 404, words: "no such endpoint" },
  DELIVERY_NOT_FOUND: { status: 404, words: "no such delivery of this endpoint" },
  RULE_NOT_FOUND: { status: 404, words: "no such deny rule" },
  LANE_NOT_FOUND: { status: 404, words: "this sale has no such lane" },
  BATCH_NOT_FOUND: { status: 404, words: "this sale has no such batch of codes" },
  STRATEGY_NOT_FOUND: { status: 404, words: "no such strategy in the lab" },
  METHOD_NOT_ALLOWED: { status: 405, words: "this method is not allowed here" },
  SOLD_OUT: { status: 409, words: "the sale is sold out" },
  QUANTITY_UNAVAILABLE: { status: 409, words: "fewer units remain than were asked for" },
  ALREADY_PURCHASED: { status: 409, words: "you already hold the most units one buyer may hold in this sale" },
  PER_USER_LIMIT_EXCEEDED: { status: 409, words: "that many more units would take you past this sale's limit per buyer" },
  SALE_NOT_STARTED: { status: 409, words: "the sale has not started" },
  SALE_ENDED: { status: 409, words: "the sale has ended" },
  SALE_PAUSED: { status: 409, words: "the sale is paused; try again later" },
  SALE_CANCELLED: { status: 409, words: "the sale was cancelled" },
  QUEUE_PASS_USED: { status: 409, words: "this Queue-Pass bought already; each pass buys once" },
  QUEUE_PASS_EXPIRED: { status: 409, words: "this Queue-Pass expired; the next place in line was let in" },
  ACCESS_CODE_USED: { status: 409, words: "this access code has no uses left" },
  QUEUE_OFF: { status: 409, words: "this sale has no waiting room" },
  QUEUE_NOT_OPEN: { status: 409, words: "the waiting room is not open yet" },
  QUEUE_OPEN: { status: 409, words: "the waiting room's settings change only before joining opens" },
  QUEUE_NOT_RANDOM: { status: 409, words: "this sale's waiting room is not random: it draws no places" },
  QUEUE_DRAW_PENDING: { status: 409, words: "the pre-queue's places are published once the sale is over" },
  DRAW_OPEN: { status: 409, words: "what the draw draws from changes only before its entries open" },
  DRAW_ONLY: { status: 409, words: "this sale is sold by draw: enter it instead" },
  DRAW_NOT_OPEN: { status: 409, words: "the draw's entries are not open yet" },
  DRAW_CLOSED: { status: 409, words: "the draw's entries are closed" },
  DRAW_NOT_CLOSED: { status: 409, words: "the draw's entries are not closed yet" },
  NOT_A_DRAW: { status: 409, words: "this sale is not sold by draw" },
  LANES_OVER: { status: 409, words: "the sale's public start has come: access codes are no longer asked for" },
  SALE_STARTED: {
    status: 409,
    words: "the window, the admission and the human check change only before the sale starts",
  },
  SALE_CLOSED: { status: 409, words: "stock changes only until the sale ends, and never once it is cancelled" },
  STOCK_DECREASE: { status: 409, words: "stock only grows" },
  NO_ID_SLOT: { status: 409, words: "too many sales overlap this window; order ids have no free slot" },
  EDIT_CONFLICT: { status: 409, words: "the sale kept changing during this edit; send it again" },
  SALE_NOT_LOADED: { status: 409, words: "the change is recorded, but Redis lost the sale's live state" },
  SALE_LOADED: { status: 409, words: "Redis holds the sale: nothing to restore" },
  SALE_ARCHIVED: {
    status: 409,
    words: "the sale ended and was archived: its record lives in D1, nothing to restore",
  },
  RESTORE_IN_PROGRESS: { status: 409, words: "another restore of this sale is running", retryAfterSec: 5 },
  ORDERS_IN_FLIGHT: {
    status: 409,
    words: "orders accepted before Redis lost the sale are still reaching D1",
    retryAfterSec: 5,
  },
  RESTORE_INTERRUPTED: { status: 409, words: "the restore lost its lock and stopped writing; send it again" },
  ORDER_NOT_PAYABLE: { status: 409, words: "this order cannot be paid" },
  ORDER_NOT_CANCELLABLE: { status: 409, words: "only an order awaiting payment can be cancelled" },
  PAYMENT_IN_PROGRESS: {
    status: 409,
    words: "another payment for this order is being processed; nothing was charged",
    retryAfterSec: 1,
  },
  DENY_RULES_FULL: { status: 409, words: "the most deny rules are kept; delete some first" },
  PRECONDITION_FAILED: { status: 412, words: "the sale changed since the version If-Match names" },
  PAYLOAD_TOO_LARGE: { status: 413, words: "the request body is too large" },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    words: "request bodies must be JSON, sent with Content-Type: application/json",
  },
  IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    words: "this Idempotency-Key was already used with a different request",
  },
  RATE_LIMITED: { status: 429, words: "too many requests; try again after Retry-After", retryAfterSec: 1 },
  INTERNAL: { status: 500, words: "internal error" },
  UNAVAILABLE: { status: 503, words: "this cannot be done right now; try again shortly", retryAfterSec: 1 },
  BUSY: { status: 503, words: "too many checkouts contend for this sale; try again shortly", retryAfterSec: 1 },
  PAYMENT_UNAVAILABLE: { status: 503, words: "payments cannot be taken on this server", retryAfterSec: 60 },
  ANALYTICS_UNAVAILABLE: { status: 503, words: "the funnel's analytics cannot be read on this server", retryAfterSec: 60 },
} as const satisfies Record<string, ErrorSpec>;

export type ErrorCode = keyof typeof ERRORS;
export type ErrorStatus = (typeof ERRORS)[ErrorCode]["status"];

/**
 * When each code is sent, for the API document and docs/api.md. Only the generator reads
 * this; the Worker's bundle leaves it out. `sometimesRetryAfter`: sent with Retry-After in
 * the case the text names.
 */
export const ERROR_DOCS: Record<ErrorCode, { when: string; sometimesRetryAfter?: true }> = {
  BAD_REQUEST: { when: "a malformed id, body, query or header; nothing changed" },
  VARIANT_REQUIRED: { when: "the sale has variants and the checkout named none" },
  INVALID_CURSOR: { when: "a cursor this API did not give, altered or expired (30 minutes); nothing is read" },
  UNAUTHORIZED: { when: "a missing, forged or expired token or signature (with WWW-Authenticate for a bearer token)" },
  PAYMENT_DECLINED: { when: "the provider declined the charge; the order still awaits payment" },
  CROSS_ORIGIN: { when: "an admin route asked from another origin (its Origin header)" },
  CORS_ORIGIN_DENIED: { when: "a preflight from an origin ALLOWED_ORIGINS does not list" },
  HOST_NOT_ALLOWED: { when: "LOOPBACK_HOSTS_ONLY is on (the local stack) and the Host is not a loopback name" },
  HUMAN_CHECK_REQUIRED: { when: "the sale asks for the human check here and no Human-Check token came; nothing changed" },
  HUMAN_CHECK_FAILED: {
    when: "Cloudflare did not vouch for the Human-Check token, for this sale's action, this once (or a deny rule matched a caller of such a sale)",
  },
  QUEUE_PASS_REQUIRED: { when: "a sale with a waiting room, checked out without a Queue-Pass" },
  QUEUE_PASS_INVALID: {
    when: "a Queue-Pass that is malformed (any shape, any length), forged, another buyer's or another sale's, or not admitted",
  },
  QUEUE_TICKET_INVALID: {
    when: "a Queue-Ticket that is malformed (any shape, any length), forged, another buyer's or another sale's",
  },
  ACCESS_CODE_REQUIRED: { when: "a presale lane is open, the public start has not come, and no Access-Code came" },
  ACCESS_CODE_INVALID: {
    when: "an Access-Code that is unknown, revoked, expired, of a lane not open yet, or bound to another account",
  },
  NOT_FOUND: { when: "no such route, or a route that is off here (the lab, dev login, payments, the local cron)" },
  SALE_NOT_FOUND: { when: "no such sale" },
  VARIANT_NOT_FOUND: { when: "the sale has no variant of that id" },
  ORDER_NOT_FOUND: { when: "no such order, or another user's" },
  NOT_ENTERED: { when: "the caller holds no entry in the sale's draw" },
  ENDPOINT_NOT_FOUND: { when: "no such endpoint for order events" },
  DELIVERY_NOT_FOUND: { when: "no such delivery of this endpoint" },
  RULE_NOT_FOUND: { when: "no deny rule has this id" },
  LANE_NOT_FOUND: { when: "the sale has no presale lane of that name" },
  BATCH_NOT_FOUND: { when: "the sale has no batch of access codes of that id" },
  STRATEGY_NOT_FOUND: { when: "the lab has no strategy of that name" },
  METHOD_NOT_ALLOWED: { when: "a known path asked with another method (Allow lists the methods it takes)" },
  SOLD_OUT: { when: "nothing is left (of the variant named, where the sale has variants: the message names it)" },
  QUANTITY_UNAVAILABLE: { when: "fewer units remain than were asked for, but some do (the message says how many)" },
  ALREADY_PURCHASED: { when: "the buyer holds the most units one buyer may hold (the message names their latest order)" },
  PER_USER_LIMIT_EXCEEDED: { when: "the buyer holds some units, and the quantity asked for would take them past the limit" },
  SALE_NOT_STARTED: { when: "before the sale's startsAt (the message says when)" },
  SALE_ENDED: { when: "after the sale's endsAt" },
  SALE_PAUSED: { when: "the sale is paused until it is resumed" },
  SALE_CANCELLED: { when: "the sale was cancelled for good (nor is a cancelled sale paused or resumed)" },
  QUEUE_PASS_USED: { when: "the Queue-Pass bought already" },
  QUEUE_PASS_EXPIRED: { when: "the Queue-Pass's time ran out; the next place was let in" },
  ACCESS_CODE_USED: { when: "the Access-Code's uses are all spent" },
  QUEUE_OFF: { when: "the sale has no waiting room" },
  QUEUE_NOT_OPEN: {
    when: "before startsAt - queue.prequeueSec (a sale with lanes and a waiting room: before its first lane's startsAt - queue.prequeueSec)",
  },
  QUEUE_OPEN: { when: "the waiting room's settings, or a queued sale's lanes, once joining its first line opened" },
  QUEUE_NOT_RANDOM: { when: "a random waiting room's published draw, asked of a sale whose waiting room is off or fifo" },
  QUEUE_DRAW_PENDING: {
    when: "the published places read before the sale ended (or was cancelled) and its pre-queue was published; GET /api/sales/{saleId}/queue/draw says where it stands",
  },
  DRAW_OPEN: {
    when: "the draw's times or beacon, the stock, the human check or the lanes of a draw sale, once its entries opened",
  },
  DRAW_ONLY: { when: "a checkout or a queue join of a sale sold by draw" },
  DRAW_NOT_OPEN: { when: "before the draw's opensAt" },
  DRAW_CLOSED: { when: "at or after the draw's closesAt (an entry, a change or a withdrawal)" },
  DRAW_NOT_CLOSED: {
    when: "the draw is asked to run, or its committed list is read, before its entries closed and were committed",
  },
  NOT_A_DRAW: { when: "a draw route of a sale not sold by draw" },
  LANES_OVER: { when: "codes asked for once the sale's public start has come, or the sale is over" },
  SALE_STARTED: { when: "the window, admission, humanCheck, a variant added or repriced, once the sale started" },
  SALE_CLOSED: { when: "stock of an ended or cancelled sale" },
  STOCK_DECREASE: { when: "stock (of the sale or a variant) lower than it is" },
  NO_ID_SLOT: { when: "too many sales overlap the window: order ids have no free slot" },
  EDIT_CONFLICT: { when: "the sale kept changing during the edit; send it again" },
  SALE_NOT_LOADED: {
    when: "recorded in D1, but Redis lost the sale's live state; POST /admin/sales/{saleId}/restore rebuilds it, this change included",
  },
  SALE_LOADED: { when: "Redis holds the sale: nothing to restore" },
  SALE_ARCHIVED: { when: "the sale ended and was archived: nothing to restore" },
  RESTORE_IN_PROGRESS: { when: "another restore of the sale is running; ask again after Retry-After" },
  ORDERS_IN_FLIGHT: { when: "orders accepted before Redis lost the sale are still reaching D1; ask again after Retry-After" },
  RESTORE_INTERRUPTED: { when: "the restore lost its lock and stopped writing; send it again" },
  ORDER_NOT_PAYABLE: {
    when: "expired, cancelled, already paid, or still pending (then with Retry-After); the message says which",
    sometimesRetryAfter: true,
  },
  ORDER_NOT_CANCELLABLE: {
    when: "paid, expired, cancelled, confirmed, or still pending (then with Retry-After)",
    sometimesRetryAfter: true,
  },
  PAYMENT_IN_PROGRESS: { when: "another payment for the order is being processed; nothing was charged" },
  DENY_RULES_FULL: { when: "the most deny rules are kept; delete some first" },
  PRECONDITION_FAILED: { when: "If-Match named another version (ETag says the current one)" },
  PAYLOAD_TOO_LARGE: { when: "a request body over 16 KiB" },
  UNSUPPORTED_MEDIA_TYPE: { when: "a request body that is not JSON, or none where the route needs one" },
  IDEMPOTENCY_KEY_REUSED: { when: "this Idempotency-Key was used with another request" },
  RATE_LIMITED: {
    when: "too many requests: an isolate's bucket per address or user, a global limit counted across isolates, or the sale's admission rate (with RateLimit-*)",
  },
  INTERNAL: { when: "a fault of the server's own; nothing about it is told" },
  UNAVAILABLE: {
    when: "Redis, D1 or a provider cannot be reached right now, or the server's settings are refused (the message names the setting); nothing changed unless the message says so",
  },
  BUSY: { when: "a lab strategy gave up under contention" },
  PAYMENT_UNAVAILABLE: { when: "the dev payment provider on a Host that is not loopback; nothing is charged" },
  ANALYTICS_UNAVAILABLE: {
    when: "neither ANALYTICS_ACCOUNT_ID with ANALYTICS_API_TOKEN nor ANALYTICS_STAND_IN_URL is set: the funnel is written but cannot be read here",
  },
};
