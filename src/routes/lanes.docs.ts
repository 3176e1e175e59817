// A sale's presale lanes operated: access codes and staff passes, documented beside
// src/routes/lanes.ts (src/shared/route-docs.ts: the Worker never imports them).
import * as Bodies from "../shared/api-types";
import * as Requests from "../shared/requests";
import type { RouteDoc } from "../shared/route-docs";

export const lanesDocs: readonly RouteDoc[] = [
  {
    method: "post",
    path: "/admin/sales/:saleId/lanes/:lane/codes",
    tag: "admin",
    summary: "Make a batch of access codes for a lane, shown this once",
    description:
      "count codes (12 characters of Crockford's base32, grouped by four), each good for uses purchases, until expiresAt if given (after the lane's start: 400 otherwise). Only their hashes are kept: the answer is the one time the codes are shown. With Accept: text/csv the same codes come as a CSV file (code,lane,uses,expires_at). A code is bound to the first account that buys with it; any lane's code is taken in its own lane's window and every later lane's, until the sale's startsAt.",
    auth: "admin",
    params: Requests.LaneParam,
    requestHeaders: { Accept: { required: false, description: "text/csv for the codes as a CSV file" } },
    body: { schema: Requests.CodeBatchBody, required: true },
    responses: {
      201: {
        description: "the batch and its codes",
        body: Bodies.CodeBatchCreated,
        csv: "code,lane,uses,expires_at: a row per code",
      },
    },
    errors: [
      "BAD_REQUEST",
      "SALE_NOT_FOUND",
      "LANE_NOT_FOUND",
      ["LANES_OVER", "codes are made only before the sale's startsAt"],
      "UNAVAILABLE",
    ],
  },
  {
    method: "get",
    path: "/admin/sales/:saleId/codes",
    tag: "admin",
    summary: "The sale's batches of codes, and per lane its codes issued, bound and spent and units sold",
    auth: "admin",
    params: Requests.SaleIdParam,
    responses: { 200: { description: "the batches, oldest first, and the lanes", body: Bodies.CodeBatches } },
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "UNAVAILABLE"],
  },
  {
    method: "delete",
    path: "/admin/sales/:saleId/codes/:batchId",
    tag: "admin",
    summary: "Revoke a batch: its codes' unspent uses are refused from now on",
    description: "Uses already spent stay spent, and the orders they bought stand. Revoking twice is the same as once.",
    auth: "admin",
    params: Requests.BatchIdParam,
    responses: { 204: { description: "revoked" } },
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "BATCH_NOT_FOUND", "UNAVAILABLE"],
  },
  {
    method: "post",
    path: "/admin/sales/:saleId/bypass",
    tag: "admin",
    summary: "A staff pass: a one-time Queue-Pass for a named user, past the line and never past the stock",
    description:
      "For a sale with a waiting room. The pass buys once, within the buyer's limit, from what is left, for the sale's passTtlSec from its startsAt (or from now, once started); a pass minted again for the same user replaces the one before. Each is logged with the user, when and from which client address.",
    auth: "admin",
    params: Requests.SaleIdParam,
    body: { schema: Requests.BypassBody, required: true },
    responses: { 201: { description: "the pass, to be sent as Queue-Pass", body: Bodies.BypassPass } },
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", ["QUEUE_OFF", "the sale has no line to skip"], "SALE_ENDED", "UNAVAILABLE"],
  },
  {
    method: "get",
    path: "/admin/sales/:saleId/bypass",
    tag: "admin",
    summary: "The staff passes minted for the sale, latest first (the last 500)",
    auth: "admin",
    params: Requests.SaleIdParam,
    responses: { 200: { description: "who, until when, minted when and from where", body: Bodies.BypassLog } },
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "UNAVAILABLE"],
  },
];
