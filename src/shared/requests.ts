// What the API accepts: every request body, path parameter and query it validates. The
// routes validate with these schemas, and the API's documentation is generated from them.

import * as z from "zod/mini";
import { LAB_SALE_ID_PATTERN, MAX_ADMISSION, MAX_STOCK, SALE_ID_PATTERN, SALE_WINDOW } from "./limits";
import { isOrderId } from "./order-id";
import "./zod-english";

export const SaleIdParam = z.object({
  saleId: z.string().check(z.regex(SALE_ID_PATTERN, "the sale id must be a positive integer")),
});

export const OrderIdParam = z.object({
  orderId: z.string().check(z.refine(isOrderId, "the order id must be a decimal 64-bit integer")),
});

export const LabSaleIdParam = z.object({
  labSaleId: z.string().check(z.regex(LAB_SALE_ID_PATTERN, "the lab sale id must be a lowercase UUID")),
});

const Admission = z.strictObject({
  rate: z.int().check(z.minimum(1), z.maximum(MAX_ADMISSION.rate)),
  burst: z.int().check(z.minimum(1), z.maximum(MAX_ADMISSION.burst)),
});

/** POST /admin/sales */
export const CreateSaleBody = z
  .strictObject({
    name: z.string().check(z.trim(), z.minLength(1), z.maxLength(200)),
    stock: z.int().check(z.minimum(1), z.maximum(MAX_STOCK)),
    startsAt: z.iso.datetime({ offset: true }),
    endsAt: z.iso.datetime({ offset: true }),
    admission: z.optional(Admission),
  })
  .check(
    z.refine((s) => Date.parse(s.endsAt) > Date.parse(s.startsAt), {
      message: "endsAt must be after startsAt",
      path: ["endsAt"],
    }),
    z.refine((s) => Date.parse(s.startsAt) >= Date.now() - SALE_WINDOW.maxStartAgoMs, {
      message: "startsAt must be at most a day ago",
      path: ["startsAt"],
    }),
    z.refine((s) => Date.parse(s.startsAt) <= Date.now() + SALE_WINDOW.maxStartAheadMs, {
      message: "startsAt must be at most a year from now",
      path: ["startsAt"],
    }),
    z.refine((s) => Date.parse(s.endsAt) - Date.parse(s.startsAt) <= SALE_WINDOW.maxLengthMs, {
      message: "a sale lasts at most 30 days",
      path: ["endsAt"],
    }),
  );
export type CreateSaleBody = z.infer<typeof CreateSaleBody>;

/** POST /lab/sales */
export const CreateLabSaleBody = z.strictObject({ stock: z.int().check(z.minimum(1), z.maximum(MAX_STOCK)) });
