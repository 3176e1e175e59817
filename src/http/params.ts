import { z } from "zod";
import { LAB_SALE_ID_PATTERN, SALE_ID_PATTERN } from "../shared/limits";
import { isOrderId } from "../shared/order-id";

// Path parameters, checked by validate("param", ...) before anything else runs: a malformed
// id costs no token verification and never reaches Redis or D1.

export const SaleIdParam = z.object({ saleId: z.string().regex(SALE_ID_PATTERN, "the sale id must be a positive integer") });

export const OrderIdParam = z.object({
  orderId: z.string().refine(isOrderId, "the order id must be a decimal 64-bit integer"),
});

export const LabSaleIdParam = z.object({
  labSaleId: z.string().regex(LAB_SALE_ID_PATTERN, "the lab sale id must be a lowercase UUID"),
});
