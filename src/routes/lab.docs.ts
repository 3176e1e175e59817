// The oversell lab's routes, documented beside src/routes/lab.ts
// (src/shared/route-docs.ts: the Worker never imports them).
import * as z from "zod/mini";
import * as Bodies from "../shared/api-types";
import { STRATEGIES } from "../shared/lab-strategies";
import * as Lab from "../shared/lab-types";
import * as Requests from "../shared/requests";
import type { RouteDoc, RouteError } from "../shared/route-docs";
import "../shared/zod-english";

const LAB_OFF = "The lab answers 404 NOT_FOUND for every route unless LAB_ENABLED is true.";
const labOff: RouteError = ["NOT_FOUND", "the lab is off"];
const LabCheckoutParams = z.extend(Requests.LabSaleIdParam, { strategy: z.enum(STRATEGIES) });

export const labDocs: readonly RouteDoc[] = [
  {
    method: "post",
    path: "/lab/sales",
    tag: "lab",
    summary: "Create a lab sale: one copy per strategy",
    description: LAB_OFF,
    auth: "admin",
    body: { schema: Requests.CreateLabSaleBody, required: true },
    responses: { 201: { description: "the lab sale", body: Lab.LabSaleCreated } },
    errors: [labOff, "BAD_REQUEST", "UNAVAILABLE"],
  },
  {
    method: "post",
    path: "/lab/read-path",
    tag: "lab",
    summary: "Page views with some cache guards off: what reaches D1",
    description: `The read path's failure modes, shown: cold, warm and stale entries and ids that never existed, each guard (bloom, jitter, rebuildOnce, setIfNewer) on or off. ${LAB_OFF}`,
    auth: "admin",
    body: { schema: Requests.ReadPathExperimentBody, required: true },
    responses: { 200: { description: "D1's queries for the views", body: Lab.ReadPathFigures } },
    errors: [labOff, "BAD_REQUEST", "UNAVAILABLE"],
  },
  {
    method: "get",
    path: "/lab/sales/:labSaleId/report",
    tag: "lab",
    summary: "What each strategy really sold",
    description: LAB_OFF,
    auth: "admin",
    params: Requests.LabSaleIdParam,
    responses: { 200: { description: "the report", body: Lab.LabSaleReport } },
    errors: [labOff, "BAD_REQUEST", ["SALE_NOT_FOUND", "no such lab sale"], "UNAVAILABLE"],
  },
  {
    method: "get",
    path: "/lab/sales/:saleId/queue/stream",
    tag: "lab",
    summary: "The waiting room's push channel: the buyer's standing as server-sent events",
    description: `One long request instead of a poll every few seconds: each event is the answer a poll of GET /api/sales/{saleId}/queue would have given (QueuePosition, as JSON), sent when its retryAfterSec says a poll would come, the last once the buyer is let in (with the pass) or will not be. A prototype measured against polling (npm run cost): places already known only. ${LAB_OFF}`,
    auth: "user",
    params: Requests.SaleIdParam,
    requestHeaders: {
      "Queue-Ticket": { required: true, description: "the ticket POST /api/sales/{saleId}/queue gave, its place known" },
    },
    responses: { 200: { description: "a text/event-stream of the buyer's standing" } },
    errors: [labOff, "BAD_REQUEST", "QUEUE_TICKET_INVALID", "UNAVAILABLE"],
  },
  {
    method: "post",
    path: "/lab/:strategy/sales/:labSaleId/checkout",
    tag: "lab",
    summary: "Buy from a lab sale's copy under one strategy",
    description: `The checkout's answers, under a textbook strategy. ${LAB_OFF}`,
    auth: "user",
    params: LabCheckoutParams,
    responses: { 202: { description: "reserved", body: Bodies.CheckoutAccepted } },
    errors: [
      labOff,
      "BAD_REQUEST",
      "STRATEGY_NOT_FOUND",
      ["SALE_NOT_FOUND", "no such lab sale"],
      "SOLD_OUT",
      "ALREADY_PURCHASED",
      ["UNAVAILABLE", "Redis cannot be reached, or the redlock strategy has no LOCK_QUORUM_NODES"],
      "BUSY",
    ],
  },
];
