// The storefront's reads of sales, documented beside src/routes/sales.ts
// (src/shared/route-docs.ts: the Worker never imports them).
import * as Bodies from "../shared/api-types";
import * as Requests from "../shared/requests";
import type { RouteDoc } from "../shared/route-docs";

export const salesDocs: readonly RouteDoc[] = [
  {
    method: "get",
    path: "/api/sales",
    tag: "storefront",
    summary: "The catalog: upcoming and live sales by start, a page at a time",
    description:
      "20 sales a page, each with its live remaining stock; nextCursor (null on the last page) asks for the next. Pages are cached (a second in each isolate, seconds in Redis, evicted when any sale changes).",
    auth: "none",
    query: Requests.CatalogQuery,
    responses: { 200: { description: "a page of the catalog", body: Bodies.CatalogPage } },
    errors: [["INVALID_CURSOR", "nothing is cached either"], "UNAVAILABLE"],
  },
  {
    method: "get",
    path: "/api/sales/:saleId",
    tag: "storefront",
    summary: "A sale with its live remaining stock",
    description:
      "The sale's record is cached (500 ms in each isolate, then Redis in front of D1, evicted on every change); remaining stock is read live from Redis. Polling faster than 500 ms shows nothing new.",
    auth: "none",
    params: Requests.SaleIdParam,
    responses: { 200: { description: "the sale", body: Bodies.SaleView } },
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND", "UNAVAILABLE"],
  },
];
