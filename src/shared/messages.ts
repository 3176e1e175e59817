import * as z from "zod/mini";
import {
  DEFAULT_VARIANT,
  LANE_NAME_PATTERN,
  MAX_PER_USER_LIMIT,
  MAX_USER_ID_LENGTH,
  ORDER_ID_PATTERN,
  QUEUE_MESSAGE_MAX_ORDERS,
  SALE_ID_PATTERN,
  VARIANT_ID_PATTERN,
} from "./limits";
import { TRACEPARENT_PATTERN } from "./trace";
import "./zod-english";

/** One accepted order, as settlement needs it. */
export const OrderMessageSchema = z.object({
  orderId: z.string().check(z.regex(ORDER_ID_PATTERN)),
  saleId: z.string().check(z.regex(SALE_ID_PATTERN)),
  userId: z.string().check(z.minLength(1), z.maxLength(MAX_USER_ID_LENGTH)),
  quantity: z.int().check(z.minimum(1), z.maximum(MAX_PER_USER_LIMIT)),
  /** The variant its units are of; messages sent before variants carry none: "default". */
  variant: z._default(z.string().check(z.regex(VARIANT_ID_PATTERN)), DEFAULT_VARIANT),
  reservedAt: z.int().check(z.nonnegative()),
  /** Bought in a presale lane (docs/lanes.md): the lane and the access code's hash it spent. */
  lane: z.optional(z.string().check(z.regex(LANE_NAME_PATTERN))),
  accessCode: z.optional(z.string().check(z.regex(/^[0-9a-f]{32}$/))),
  /** The W3C traceparent of the request that reserved it (src/shared/trace.ts); messages sent before traces carry none. */
  traceparent: z.optional(z.string().check(z.regex(TRACEPARENT_PATTERN))),
});
export type OrderMessage = z.infer<typeof OrderMessageSchema>;

/**
 * What travels on both queues: the orders one merged checkout call reserved (or one re-drive
 * chunk), as one message. A queue bills and limits per message (about 5k/s), so a stampede
 * costs a message per call, not per buyer. On the dead-letter queue `reason` says why the
 * orders could not settle.
 */
export const SettlementMessageSchema = z.object({
  orders: z.array(OrderMessageSchema).check(z.minLength(1), z.maxLength(QUEUE_MESSAGE_MAX_ORDERS)),
  reason: z.optional(z.string().check(z.maxLength(500))),
});
export type SettlementMessage = z.infer<typeof SettlementMessageSchema>;

/** A dead letter, one order and why it could not settle. */
export type DeadLetter = OrderMessage & { reason?: string };

/**
 * Work that runs later, on the jobs queue (sent with delaySeconds): expiring orders whose
 * payment window closes then; evicting a changed sale's cached copies a second time; pushing
 * an operator's change to Redis again when it could not reach it;
 * rebuilding a sale Redis lost or holds behind D1, once that is safe; sending order events;
 * running a draw and offering its units; publishing a random sale's pre-queue.
 */
export const JobMessageSchema = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("expire-orders"),
    orderIds: z.array(z.string().check(z.regex(ORDER_ID_PATTERN))).check(z.minLength(1), z.maxLength(QUEUE_MESSAGE_MAX_ORDERS)),
  }),
  z.object({
    kind: z.literal("evict-sale"),
    saleId: z.string().check(z.regex(SALE_ID_PATTERN)),
    /** Its keys were archived away: evict without leaving a floor behind. */
    archived: z._default(z.boolean(), false),
  }),
  z.object({ kind: z.literal("heal-sale"), saleId: z.string().check(z.regex(SALE_ID_PATTERN)) }),
  /** Bring Redis' copy of the sale to D1's record (src/sales/sync-upkeep.ts); retried until Redis takes it. */
  z.object({ kind: z.literal("sync-sale"), saleId: z.string().check(z.regex(SALE_ID_PATTERN)) }),
  /** Send the order events that are due to the shop's endpoints. */
  z.object({ kind: z.literal("deliver-order-events") }),
  /** Run a sale's draw a few steps further (docs/draws.md). */
  z.object({ kind: z.literal("draw-step"), saleId: z.string().check(z.regex(SALE_ID_PATTERN)) }),
  /** Offer a drawn sale's units to its winners, or units that came back to its waitlist. */
  z.object({ kind: z.literal("draw-offer"), saleId: z.string().check(z.regex(SALE_ID_PATTERN)) }),
  /** Publish a random sale's pre-queue a few steps further, once the sale is over. */
  z.object({ kind: z.literal("queue-draw-step"), saleId: z.string().check(z.regex(SALE_ID_PATTERN)) }),
]);
export type JobMessage = z.infer<typeof JobMessageSchema>;
