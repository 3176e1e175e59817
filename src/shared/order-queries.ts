// The queries of the order lists: GET /admin/sales/:saleId/orders(.csv) and GET /api/orders.
import * as z from "zod/mini";
import { ORDER_STATUSES } from "./order-status";
import "./zod-english";

export const DEFAULT_ORDER_PAGE = 50;
export const MAX_ORDER_PAGE = 200;

const OrderCursor = z.string().check(z.regex(/^\d{1,16}\.\d{1,20}$/, "cursor must be a nextCursor this API gave"));
/** Orders in D1 are never pending: that state lives in Redis until settlement. */
const ListedStatus = z.enum(ORDER_STATUSES.filter((s) => s !== "pending") as [string, ...string[]]);

/** GET /api/orders?cursor= */
export const BuyerOrdersQuery = z.object({ cursor: z.optional(OrderCursor) });

/** GET /admin/sales/:saleId/orders.csv?status= */
export const OrderExportQuery = z.object({ status: z.optional(ListedStatus) });

/** GET /admin/sales/:saleId/orders?status=&cursor=&limit= */
export const SaleOrdersQuery = z.object({
  status: z.optional(ListedStatus),
  cursor: z.optional(OrderCursor),
  limit: z.optional(
    z
      .string()
      .check(
        z.refine(
          (v) => /^\d{1,3}$/.test(v) && Number(v) >= 1 && Number(v) <= MAX_ORDER_PAGE,
          `limit must be 1 to ${MAX_ORDER_PAGE}`,
        ),
      ),
  ),
});
