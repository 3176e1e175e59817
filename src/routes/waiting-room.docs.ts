// The waiting room's join and poll, documented beside src/routes/waiting-room.ts
// (src/shared/route-docs.ts: the Worker never imports them).
import * as Bodies from "../shared/api-types";
import * as Requests from "../shared/requests";
import { CALLER_LIMITED, PER_USER_BUCKET, type RouteDoc } from "../shared/route-docs";

export const waitingRoomDocs: readonly RouteDoc[] = [
  {
    method: "post",
    path: "/api/sales/:saleId/queue",
    tag: "storefront",
    summary: "Join a sale's waiting room: the ticket to poll with",
    description:
      "Once per buyer and sale: joining again answers the same ticket and place. A fifo sale places buyers in arrival order; a random sale places everyone who joined during the pre-queue at the start, by the draw its seed commitment fixes (place is null until then), and later joiners behind them in arrival order. Callers a deny rule matches, whose Human-Check token does not pass, or who bring a user id beyond ACCOUNTS_PER_ADDRESS from one client address to the sale are not told so: they get a ticket like any other, for a place of their own whose turn comes as anyone's (admitted, with a pass like any other) but whose pass buys nothing (a checkout with it is answered SOLD_OUT, whatever is left), and are counted in the sale's stats. A buyer who holds a place already is answered it before any Human-Check token is judged or spent. A sale with presale lanes has a line of its own for each lane (docs/lanes.md), opening queue.prequeueSec before the lane's startsAt and admitting from it until the next lane's start or the sale's startsAt: while one is open for joining, a buyer with an Access-Code joins the first open lane's line that takes the code, and one without is refused until the public line opens.",
    auth: "user",
    params: Requests.SaleIdParam,
    requestHeaders: {
      "Human-Check": {
        required: false,
        description:
          "a Turnstile token, rendered with action sale-<saleId>, for a sale with humanCheck (the site key is in GET /api/config); each token passes once",
      },
      "Access-Code": {
        required: false,
        description:
          "a presale lane's code, while a lane's own line is open for joining: it joins that lane's line (or a later lane's), checked and bound to the joiner there, so one code queues one account; no use is spent until checkout, which needs the code again with the line's pass. Outside lanes' lines it is ignored",
      },
    },
    responses: { 200: { description: "in line", body: Bodies.QueueJoined } },
    errors: [
      "BAD_REQUEST",
      ["HUMAN_CHECK_REQUIRED", "nothing joined"],
      ["ACCESS_CODE_REQUIRED", "here: a lane's line is open for joining and the public line is not; nothing joined"],
      ["ACCESS_CODE_INVALID", "here: also of a lane later than every lane's line open for joining; nothing joined"],
      ["ACCESS_CODE_USED", "nothing joined"],
      "SALE_NOT_FOUND",
      "QUEUE_NOT_OPEN",
      "QUEUE_OFF",
      "DRAW_ONLY",
      PER_USER_BUCKET,
      [
        "RATE_LIMITED",
        "with an Access-Code: too many codes refused as invalid from this user or address (ACCESS_CODE_FAILURES_PER_*), counted across isolates",
      ],
      ...CALLER_LIMITED,
    ],
  },
  {
    method: "get",
    path: "/api/sales/:saleId/queue",
    tag: "storefront",
    summary: "Where the buyer stands in the waiting room, and the pass once admitted",
    description:
      "Costs no Redis command of its own: the place travels in the ticket and the line's progress is read at most once a second per isolate. retryAfterSec says when to ask again. A pre-queue ticket polled after the start is placed once and answered with its replacement in the Queue-Ticket header. A ticket of a lane's own line reads that line, and its pass buys only in that lane's window. estimatedWaitSec comes from the pace the line measured over about the last minute (null when unknown), likelySoldOutBeforeYou from the units left, the no-shows and returns the line measured, and the passes and places ahead: the server decides both, so every page says the same. state paused: an operator holds admission (or paused the sale), and every place is kept; notice is the operator's word to everyone waiting.",
    auth: "user",
    params: Requests.SaleIdParam,
    requestHeaders: { "Queue-Ticket": { required: true, description: "the ticket POST .../queue gave" } },
    responses: { 200: { description: "the buyer's standing", body: Bodies.QueuePosition, headers: ["Queue-Ticket"] } },
    errors: ["BAD_REQUEST", "QUEUE_TICKET_INVALID", "SALE_NOT_FOUND", PER_USER_BUCKET, "UNAVAILABLE"],
  },
];
