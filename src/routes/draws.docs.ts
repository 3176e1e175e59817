// A sale's draw: entries, an entrant's own, and what anyone checks the draw against,
// documented beside src/routes/draws.ts (src/shared/route-docs.ts: the Worker never imports them).
import * as Bodies from "../shared/api-types";
import * as Requests from "../shared/requests";
import { CALLER_LIMITED, PER_USER_BUCKET, type RouteDoc } from "../shared/route-docs";

const HUMAN_CHECK = {
  "Human-Check": {
    required: false,
    description:
      "a Turnstile token, rendered with action sale-<saleId>, for a sale with humanCheck (the site key is in GET /api/config); each token passes once",
  },
};

export const drawsDocs: readonly RouteDoc[] = [
  {
    method: "post",
    path: "/api/sales/:saleId/entries",
    tag: "storefront",
    summary: "Enter a sale's draw, or change the entry",
    description:
      "One entry per buyer and sale, between the draw's opensAt and closesAt: entering again changes its variant and quantity (the receipt and enteredAt stay). The receipt is the entrant's alone: with their user id it makes the entrant hash of their leaf in the committed list (docs/draws.md). A caller a deny rule matches, whose Human-Check token does not pass, or who brings a user id beyond ACCOUNTS_PER_ADDRESS from one client address is answered like anyone, and its entry is never committed. In a sale with presale lanes, a first entry with an Access-Code is in the code's lane's draw (entry.lane), drawn before the public one from the lane's allotment and offered from the lane's start (docs/lanes.md); a change keeps the entry's lane.",
    auth: "user",
    params: Requests.SaleIdParam,
    requestHeaders: {
      ...HUMAN_CHECK,
      "Access-Code": {
        required: false,
        description:
          "a presale lane's code, in a sale with lanes: a first entry with it enters the code's lane's draw. Checked (known, not revoked or expired, bound to no other account, a use left) and bound to the entrant; no use is spent until the offer's checkout spends one with the unit. Without one the entry is in the public draw; a sale without lanes ignores it",
      },
    },
    body: { schema: Requests.EntryBody, required: false },
    responses: {
      200: { description: "the entry, changed (or the same again)", body: Bodies.EntryAnswer },
      201: { description: "entered", body: Bodies.EntryAnswer },
    },
    errors: [
      "BAD_REQUEST",
      "VARIANT_REQUIRED",
      ["HUMAN_CHECK_REQUIRED", "nothing entered"],
      "SALE_NOT_FOUND",
      "VARIANT_NOT_FOUND",
      "DRAW_NOT_OPEN",
      "DRAW_CLOSED",
      "NOT_A_DRAW",
      "SALE_CANCELLED",
      ["ACCESS_CODE_INVALID", "nothing entered"],
      ["ACCESS_CODE_USED", "nothing entered"],
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
    path: "/api/sales/:saleId/entries/mine",
    tag: "storefront",
    summary: "The caller's entry: its status, receipt, proof of inclusion and order",
    description:
      "entered until the draw, then selected (with the order the draw offered it), waitlisted (a unit that comes back goes to the next waitlisted entry of its variant, in shuffle order, until the sale ends) or not_selected; withdrawn after a withdrawal. Once the entries are committed, proof is the entry's RFC 6962 audit path to the draw's entriesRoot.",
    auth: "user",
    params: Requests.SaleIdParam,
    responses: { 200: { description: "the caller's entry", body: Bodies.MyEntry } },
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "NOT_ENTERED", "NOT_A_DRAW", PER_USER_BUCKET, "UNAVAILABLE"],
  },
  {
    method: "delete",
    path: "/api/sales/:saleId/entries/mine",
    tag: "storefront",
    summary: "Withdraw the caller's entry before the draw closes",
    auth: "user",
    params: Requests.SaleIdParam,
    responses: { 204: { description: "withdrawn" } },
    errors: [
      "BAD_REQUEST",
      "SALE_NOT_FOUND",
      "NOT_ENTERED",
      "DRAW_NOT_OPEN",
      "DRAW_CLOSED",
      "NOT_A_DRAW",
      PER_USER_BUCKET,
      ...CALLER_LIMITED,
    ],
  },
  {
    method: "get",
    path: "/api/sales/:saleId/draw",
    tag: "storefront",
    summary: "A draw as anyone may check it",
    description:
      "The seed's commitment from the sale's creation, the entries' Merkle root once committed, the beacon's round and its randomness once read, the seed once drawn, and the winners per variant. npm run verify-draw recomputes all of it from this and the committed list.",
    auth: "none",
    params: Requests.SaleIdParam,
    responses: { 200: { description: "the draw", body: Bodies.DrawView } },
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "NOT_A_DRAW", "UNAVAILABLE"],
  },
  {
    method: "get",
    path: "/api/sales/:saleId/draw/entries",
    tag: "storefront",
    summary: "The committed entries in tree order, a page (a chunk of the tree) at a time",
    description:
      "After the close: each leaf's index, hash, entrant hash, variant and quantity, and its result once drawn; next (null on the last page) reads on.",
    auth: "none",
    params: Requests.SaleIdParam,
    query: Requests.DrawEntriesQuery,
    responses: { 200: { description: "a page of leaves", body: Bodies.DrawEntriesPage } },
    errors: [
      "BAD_REQUEST",
      "SALE_NOT_FOUND",
      "NOT_A_DRAW",
      ["DRAW_NOT_CLOSED", "the entries are not committed yet"],
      "UNAVAILABLE",
    ],
  },
  {
    method: "post",
    path: "/admin/sales/:saleId/draw",
    tag: "admin",
    summary: "Run the draw now (the cron runs it by itself after closesAt)",
    auth: "admin",
    params: Requests.SaleIdParam,
    responses: { 202: { description: "the draw, running", body: Bodies.DrawView } },
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "NOT_A_DRAW", "DRAW_NOT_CLOSED", "UNAVAILABLE"],
  },
];
