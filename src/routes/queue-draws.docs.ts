// A random waiting room's published draw, documented beside src/routes/queue-draws.ts
// (src/shared/route-docs.ts: the Worker never imports them).
import * as Bodies from "../shared/api-types";
import * as Requests from "../shared/requests";
import type { RouteDoc } from "../shared/route-docs";

export const queueDrawsDocs: readonly RouteDoc[] = [
  {
    method: "get",
    path: "/api/sales/:saleId/queue/draw",
    tag: "storefront",
    summary: "A random waiting room's draw as anyone may check it",
    description:
      "The seed's commitment from the sale's creation; once the sale is over (ended or cancelled), the seed, and its pre-queue published: drawn (places 1..drawn) and placesRoot, the RFC 6962 Merkle root over each place's leaf (docs/api.md, Verifying a draw). The first read after the sale is over starts the publication (the cron does too): state is pending until it is ready. npm run verify-queue checks all of it from this and the places. A sale with presale lanes publishes each lane's own line apart: ?lane= reads it (its draw keys are under the line's seed, derived from the sale's: docs/lanes.md).",
    auth: "none",
    params: Requests.SaleIdParam,
    query: Requests.QueueLineQuery,
    responses: { 200: { description: "the draw", body: Bodies.QueueDrawView } },
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "QUEUE_NOT_RANDOM", "LANE_NOT_FOUND", "UNAVAILABLE"],
  },
  {
    method: "get",
    path: "/api/sales/:saleId/queue/draw/places",
    tag: "storefront",
    summary: "The pre-queue's published places in place order, a page (a chunk of the tree) at a time",
    description:
      "Once published: each place with its holder's draw key, HMAC-SHA256(line seed, user id) in hex, and no user id; a holder finds theirs from their own user id and the seed (or their ticket's d claim). next (null on the last page) reads on; ?lane= reads a presale lane's own line.",
    auth: "none",
    params: Requests.SaleIdParam,
    query: Requests.QueueDrawPlacesQuery,
    example: { query: { cursor: "21" } },
    responses: { 200: { description: "a page of places", body: Bodies.QueueDrawPlacesPage } },
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "QUEUE_NOT_RANDOM", "LANE_NOT_FOUND", "QUEUE_DRAW_PENDING", "UNAVAILABLE"],
  },
];
