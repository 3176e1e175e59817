// The buyer's and the admin's order lists, documented beside src/routes/order-lists.ts
// (src/shared/route-docs.ts: the Worker never imports them).
import * as Bodies from "../shared/api-types";
import * as OrderQueries from "../shared/order-queries";
import * as Requests from "../shared/requests";
import { CALLER_LIMITED, PER_USER_BUCKET, type RouteDoc } from "../shared/route-docs";

export const orderListsDocs: readonly RouteDoc[] = [
  {
    method: "get",
    path: "/api/orders",
    tag: "storefront",
    summary: "The caller's own orders across sales, newest first",
    description: `${OrderQueries.DEFAULT_ORDER_PAGE} orders a page; nextCursor (null on the last page) asks for the next. Orders still pending (not yet recorded in D1) are not listed; GET /api/orders/{orderId} shows them.`,
    auth: "user",
    query: OrderQueries.BuyerOrdersQuery,
    responses: { 200: { description: "a page of the caller's orders", body: Bodies.BuyerOrderPage } },
    errors: ["BAD_REQUEST", PER_USER_BUCKET, ...CALLER_LIMITED],
  },
  {
    method: "get",
    path: "/admin/sales/:saleId/orders",
    tag: "admin",
    summary: "A sale's orders, newest first, optionally of one status",
    description: `limit orders a page (default ${OrderQueries.DEFAULT_ORDER_PAGE}, at most ${OrderQueries.MAX_ORDER_PAGE}); nextCursor (null on the last page) asks for the next with the same status.`,
    auth: "admin",
    params: Requests.SaleIdParam,
    query: OrderQueries.SaleOrdersQuery,
    responses: { 200: { description: "a page of orders", body: Bodies.AdminOrderPage } },
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND"],
  },
  {
    method: "get",
    path: "/admin/sales/:saleId/orders.csv",
    tag: "admin",
    summary: "The same list as CSV (text/csv), streamed",
    description:
      "A header row (orderId,reference,saleId,saleName,userId,status,quantity,variant,variantLabel,amount,currency,createdAt,closedAt,refundDue; the amount in the currency's units, such as 49.00), then every order, newest first, read a page at a time: a sale of any size exports in bounded memory. No cell runs as a formula in a spreadsheet of either separator, `,` or `;`: a formula character (= + - @, tab, carriage return) at the start of a cell or after a `,`, `;`, tab or line break inside it gets a quote mark before it, and such a cell is quoted.",
    auth: "admin",
    params: Requests.SaleIdParam,
    query: OrderQueries.OrderExportQuery,
    responses: { 200: { description: "text/csv with a header row" } },
    errors: ["BAD_REQUEST", "SALE_NOT_FOUND"],
  },
  {
    method: "get",
    path: "/admin/orders/:orderId",
    tag: "admin",
    summary: "One order with its history (state changes), payment attempts and event deliveries",
    auth: "admin",
    params: Requests.OrderIdParam,
    responses: { 200: { description: "the order", body: Bodies.AdminOrderDetail } },
    errors: ["BAD_REQUEST", ["ORDER_NOT_FOUND", "for the admin, D1 has no such order: one still pending is not recorded yet"]],
  },
];
