import { z } from "zod";

/** What checkout puts on the queue for each accepted order. */
export const OrderMessageSchema = z.object({
  orderId: z.string().regex(/^[1-9][0-9]{0,18}$/),
  saleId: z.string().regex(/^[1-9][0-9]{0,15}$/),
  userId: z.string().min(1).max(128),
  reservedAt: z.number().int().nonnegative(),
});
export type OrderMessage = z.infer<typeof OrderMessageSchema>;

/** A dead letter carries the order and why it could not settle. */
export const DeadLetterSchema = OrderMessageSchema.extend({ reason: z.string().max(500).optional() });
export type DeadLetter = z.infer<typeof DeadLetterSchema>;
