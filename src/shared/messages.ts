import { z } from "zod";
import { MAX_USER_ID_LENGTH, ORDER_ID_PATTERN, QUEUE_MESSAGE_MAX_ORDERS, SALE_ID_PATTERN } from "./limits";

/** One accepted order, as settlement needs it. */
export const OrderMessageSchema = z.object({
  orderId: z.string().regex(ORDER_ID_PATTERN),
  saleId: z.string().regex(SALE_ID_PATTERN),
  userId: z.string().min(1).max(MAX_USER_ID_LENGTH),
  reservedAt: z.number().int().nonnegative(),
});
export type OrderMessage = z.infer<typeof OrderMessageSchema>;

/**
 * What travels on both queues: the orders one merged checkout call reserved (or one re-drive
 * chunk), as one message. A queue bills and limits per message (about 5k/s), so a stampede
 * costs a message per call, not per buyer. On the dead-letter queue `reason` says why the
 * orders could not settle.
 */
export const SettlementMessageSchema = z.object({
  orders: z.array(OrderMessageSchema).min(1).max(QUEUE_MESSAGE_MAX_ORDERS),
  reason: z.string().max(500).optional(),
});
export type SettlementMessage = z.infer<typeof SettlementMessageSchema>;

/** A dead letter, one order and why it could not settle. */
export type DeadLetter = OrderMessage & { reason?: string };
