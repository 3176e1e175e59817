// A drop's live controls, documented beside src/routes/drop-controls.ts
// (src/shared/route-docs.ts: the Worker never imports them).
import * as Bodies from "../shared/api-types";
import * as Requests from "../shared/requests";
import type { RouteDoc } from "../shared/route-docs";

/** What every control's answer says of Redis. */
const RECORDED =
  "Recorded in D1 first and logged with its time and the admin's address; Redis follows at once, or by itself once it answers again (the jobs queue, then the cron), with syncPending true and the counts null meanwhile. The same request twice changes nothing more.";

const queueView = (description: string) => ({ 200: { description, body: Bodies.QueueStats } });

const admissionHolds = [
  [
    "pause",
    "Hold admission from the waiting room: nobody more is let in, every place is kept",
    "Waiting buyers' polls answer state paused (and the notice, when message sets one); passes already given still buy.",
  ],
  [
    "resume",
    "Let the waiting room admit again, from the current place at the sale's rate",
    "The pace restarts from where the line stands, so the hold's backlog is not let in at once.",
  ],
] as const;

export const dropControlsDocs: readonly RouteDoc[] = [
  {
    method: "get",
    path: "/admin/sales/:saleId/queue",
    tag: "admin",
    summary: "The waiting room: its counts, its measured pace, its hold and notice, and the operators' actions",
    description:
      "Moves the line forward to now first, as a poll would. The public line's counts, or with ?lane= a presale lane's own line's (docs/lanes.md; remaining is then what the lane may still sell). Answers while Redis cannot be reached too: the counts are null then.",
    auth: "admin",
    params: Requests.SaleIdParam,
    query: Requests.QueueLineQuery,
    responses: queueView("the waiting room, and the seed once the sale is over"),
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "LANE_NOT_FOUND", "QUEUE_OFF"],
  },
  {
    method: "patch",
    path: "/admin/sales/:saleId/queue",
    tag: "admin",
    summary: "Change the ceiling on places let in per second, also while the sale is live",
    description: `Every isolate's next look at the line (within a second) applies it, from the current place. ${RECORDED}`,
    auth: "admin",
    params: Requests.SaleIdParam,
    body: { schema: Requests.AdmitRateBody, required: true },
    example: { body: { admitPerSec: 50 } },
    responses: queueView("the waiting room after the change"),
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "QUEUE_OFF"],
  },
  ...admissionHolds.map(
    ([action, summary, more]): RouteDoc => ({
      method: "post",
      path: `/admin/sales/:saleId/queue/${action}`,
      tag: "admin",
      summary,
      description: `${more} An optional message becomes the sale's notice. ${RECORDED}`,
      auth: "admin",
      params: Requests.SaleIdParam,
      body: { schema: Requests.AdmissionHoldBody, required: false },
      example: {
        body: {
          message: action === "pause" ? "Checkout is catching up: your place is kept." : "We are letting people in again.",
        },
      },
      responses: queueView(`the waiting room, admission ${action === "pause" ? "held" : "resumed"}`),
      errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "QUEUE_OFF"],
    }),
  ),
  {
    method: "post",
    path: "/admin/sales/:saleId/queue/enable",
    tag: "admin",
    summary: "Put a live sale without a waiting room behind one, first come first served from now",
    description: `From the moment Redis has it, checkout asks for a Queue-Pass: buyers join the line in the order they come, and are let in at the sale's queue.admitPerSec from now. A sale already queued is answered as it is. A sale with presale lanes is put behind it from its public start only (SALE_NOT_STARTED before). ${RECORDED}`,
    auth: "admin",
    params: Requests.SaleIdParam,
    responses: queueView("the waiting room, open"),
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "DRAW_ONLY", "SALE_NOT_STARTED", "SALE_CANCELLED", "SALE_ENDED"],
  },
  {
    method: "put",
    path: "/admin/sales/:saleId/notice",
    tag: "admin",
    summary: "Set, or take down, the notice every waiting and sale page of the sale shows",
    description: `One line of at most 280 characters, shown beside the sale on its page (GET /api/sales/:saleId's notice) and to everyone waiting (the poll's notice). null takes it down. ${RECORDED}`,
    auth: "admin",
    params: Requests.SaleIdParam,
    body: { schema: Requests.NoticeBody, required: true },
    example: { body: { message: "Sizes EU 41 and 42 come back at 10:00." } },
    responses: queueView("the waiting room (no counts for a sale without one)"),
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND"],
  },
  {
    method: "get",
    path: "/admin/sales/:saleId/queue/places",
    tag: "admin",
    summary: "Who holds each place in the waiting room, 1,000 places a page",
    description:
      "Places 1..drawn are a random sale's pre-queue in draw order: with the seed the public sale reveals once it ends, anyone handed this list can recompute them; the list anyone may check, without user ids, is GET /api/sales/{saleId}/queue/draw/places (npm run verify-queue reads it). The public line's, or with ?lane= a presale lane's own line, drawn with the seed derived from the sale's for that lane (docs/lanes.md).",
    auth: "admin",
    params: Requests.SaleIdParam,
    query: Requests.QueuePlacesQuery,
    responses: { 200: { description: "a page of places", body: Bodies.QueuePlaces } },
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "LANE_NOT_FOUND", "QUEUE_OFF", "UNAVAILABLE"],
  },
];
