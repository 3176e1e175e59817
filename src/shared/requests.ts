// What the API accepts: every request body, path parameter and query it validates. The
// routes validate with these schemas, and the API's documentation is generated from them.

import * as z from "zod/mini";
import {
  CURRENCY_PATTERN,
  DEFAULT_CURRENCY,
  DEFAULT_PAYMENT_WINDOW_SEC,
  DEV_USER_ID_PATTERN,
  LAB_SALE_ID_PATTERN,
  MAX_ADMISSION,
  MAX_PAYMENT_WINDOW_SEC,
  MAX_PER_USER_LIMIT,
  MAX_PRICE,
  MAX_STOCK,
  ORDER_ID_PATTERN,
  SALE_ID_PATTERN,
  SALE_WINDOW,
} from "./limits";
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
    /** Minor units (cents); what one unit costs. */
    price: z._default(z.int().check(z.minimum(0), z.maximum(MAX_PRICE)), 0),
    currency: z._default(z.string().check(z.regex(CURRENCY_PATTERN, "currency must be 3 upper-case letters")), DEFAULT_CURRENCY),
    /** Seconds a settled order waits for its payment before its units go back on sale; 0: no payment step. */
    paymentWindowSec: z._default(z.int().check(z.minimum(0), z.maximum(MAX_PAYMENT_WINDOW_SEC)), DEFAULT_PAYMENT_WINDOW_SEC),
    /** Units one buyer may hold in this sale. */
    perUserLimit: z._default(z.int().check(z.minimum(1), z.maximum(MAX_PER_USER_LIMIT)), 1),
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

/** POST /api/sales/:saleId/checkout; the body is optional (one unit). */
export const CheckoutBody = z.object({
  quantity: z._default(z.int().check(z.minimum(1), z.maximum(MAX_PER_USER_LIMIT)), 1),
});
export type CheckoutBody = z.infer<typeof CheckoutBody>;

/** POST /api/orders/:orderId/pay */
export const PayBody = z.strictObject({ paymentToken: z.string().check(z.minLength(1), z.maxLength(200)) });
export type PayBody = z.infer<typeof PayBody>;

/** POST /webhooks/payments: an event of an asynchronous payment provider, signed. */
export const PaymentEvent = z.object({
  id: z.string().check(z.minLength(1), z.maxLength(200)),
  type: z.enum(["payment.succeeded", "payment.failed"]),
  orderId: z.string().check(z.regex(ORDER_ID_PATTERN)),
  amount: z.int().check(z.minimum(0)),
  currency: z.string().check(z.regex(CURRENCY_PATTERN)),
  paymentRef: z.optional(z.string().check(z.maxLength(200))),
});
export type PaymentEvent = z.infer<typeof PaymentEvent>;

/** POST /api/dev/login: the name to mint a local token for (DEV_LOGIN only). */
export const DevLoginBody = z.strictObject({
  userId: z.string().check(z.trim(), z.regex(DEV_USER_ID_PATTERN, "1 to 64 letters, digits or _ . @ -")),
});

/** POST /lab/sales */
export const CreateLabSaleBody = z.strictObject({
  stock: z.int().check(z.minimum(1), z.maximum(MAX_STOCK)),
  /**
   * An emulated round trip (ms) the durable-object copy waits on every checkout: the hop
   * from a buyer's isolate to the object's one location, which one machine does not have.
   */
  objectHopMs: z._default(z.int().check(z.minimum(0), z.maximum(1_000)), 0),
});
