import { type Context, Hono } from "hono";
import { type AppEnv, keepAliveOf } from "../http/app-env";
import { requireUser } from "../http/auth";
import { ApiError, badRequest, orUnavailable, retryAfter, unavailable } from "../http/errors";
import { idempotencyOf } from "../http/idempotency";
import { limitGlobally, limitPerUser } from "../http/limits";
import { isLoopbackRequest } from "../http/loopback-only";
import { orderIdsOf } from "../http/secrets";
import { validate } from "../http/validate";
import { cancelOrder, type PayOutcome, payOrder } from "../orders/lifecycle";
import { ordersChanged } from "../orders/order-changes";
import { findOrderRecord, type OrderRecord } from "../orders/order-records";
import { failureKind, orderNames } from "../orders/order-views";
import { devPaymentProvider, type PaymentProvider } from "../orders/payment-provider";
import { type Redis, redisFor } from "../redis/client";
import { bucketSplitOf } from "../sales/known-sales";
import { findSaleBySlotAt } from "../sales/repository";
import type { OrderView } from "../shared/api-types";
import { buyerKeys, parsePendingRecord } from "../shared/keys";
import { log } from "../shared/log";
import { decodeOrderId } from "../shared/order-id";
import type { OrderIdCipher } from "../shared/public-order-id";
import { OrderIdParam, PayBody } from "../shared/requests";
import { settingsOf } from "../shared/settings";

// Someone else's order answers exactly like a missing one: ids are not an oracle.
const orderNotFound = () => new ApiError("ORDER_NOT_FOUND");

type ShownOrder = OrderRecord | (Omit<OrderRecord, "status"> & { status: "pending" });

const view = async (o: ShownOrder, ids: OrderIdCipher): Promise<OrderView> => ({
  ...(await orderNames(o.orderId, o, ids)),
  saleId: o.saleId,
  userId: o.userId,
  status: o.status,
  quantity: o.quantity,
  variant: o.variant,
  amount: o.amount,
  currency: o.currency,
  expiresAt: o.expiresAt === null ? null : new Date(o.expiresAt).toISOString(),
  refundDue: o.refundDue,
  failureReason: failureKind(o.status, o.status === "failed" ? o.failureReason : null),
});

/**
 * The caller's order as D1 records it, undefined when D1 has not got it (yet) or it is another
 * user's: a foreign id then takes the same path, reads and answer as a missing one.
 */
async function ownRecord(db: D1Database, orderId: string, userId: string): Promise<OrderRecord | undefined> {
  const record = await findOrderRecord(db, orderId);
  return record?.userId === userId ? record : undefined;
}

/** The caller's order: settled or failed in D1, or still pending in Redis. */
async function ownOrder(env: Env, redis: Redis, orderId: string, userId: string): Promise<ShownOrder> {
  const record = await ownRecord(env.DB, orderId, userId);
  if (record) return record;
  // Not settled yet: the id names its sale (slot + time), and Redis holds the order.
  const { slot, unixMs } = decodeOrderId(orderId);
  const sale = await findSaleBySlotAt(env.DB, slot, unixMs);
  // An archived sale settled every order it minted into D1, and its keys are gone.
  if (!sale || sale.archivedAt !== null) throw orderNotFound();
  // The caller's own order lives in the caller's bucket; another buyer's is not found there.
  const pending = await redis.hget<string>(buyerKeys(sale.id, userId, bucketSplitOf(sale)).pending, orderId);
  const parsed = pending === null ? undefined : parsePendingRecord(String(pending));
  if (!parsed) {
    // Settled between the two reads: D1 has it now.
    const settled = await ownRecord(env.DB, orderId, userId);
    if (settled) return settled;
  }
  if (parsed?.userId !== userId) throw orderNotFound();
  const variant = sale.variants.find((v) => v.id === parsed.variant);
  return {
    orderId,
    saleId: sale.id,
    userId,
    status: "pending",
    quantity: parsed.quantity,
    variant: parsed.variant,
    amount: (variant?.price ?? sale.price) * parsed.quantity,
    currency: sale.currency,
    expiresAt: null,
    refundDue: false,
    failureReason: null,
    saleName: sale.name,
    variantLabel: variant?.label ?? null,
  };
}

const stillPending = (code: "ORDER_NOT_PAYABLE" | "ORDER_NOT_CANCELLABLE") =>
  new ApiError(code, "the order is still being recorded; try again in a moment", retryAfter(1));

function providerFor(c: Context<AppEnv>, redis: Redis): PaymentProvider {
  if (settingsOf(c.env).PAYMENT_PROVIDER !== "dev") throw new ApiError("NOT_FOUND", "payments are not configured");
  // Whatever LOOPBACK_HOSTS_ONLY says: a dev provider left on in production must not mark
  // orders paid for the literal tok_visa. Nothing is charged or recorded.
  if (!isLoopbackRequest(c)) {
    log.error("payment refused: PAYMENT_PROVIDER=dev acts only on a loopback Host; configure a real provider", {
      host: c.req.header("Host") ?? null,
    });
    // Like any misconfiguration (an unusable ADMIN_TOKEN): 503, asked again in a minute.
    throw new ApiError("PAYMENT_UNAVAILABLE", "payments cannot be taken on this server", { "Retry-After": "60" });
  }
  return devPaymentProvider(redis);
}

function payError(outcome: Exclude<PayOutcome, { kind: "paid" }>): ApiError {
  switch (outcome.kind) {
    case "declined":
      return new ApiError("PAYMENT_DECLINED", `the payment was declined: ${outcome.reason}`);
    case "not_payable":
      return new ApiError("ORDER_NOT_PAYABLE", outcome.reason);
    case "key_reused":
      return new ApiError("IDEMPOTENCY_KEY_REUSED", "this Idempotency-Key was used with another request body");
    case "timed_out":
      return unavailable("the payment provider did not answer in time; retry with the same Idempotency-Key");
    case "in_progress":
      return new ApiError(
        "PAYMENT_IN_PROGRESS",
        outcome.outcomeUnknown
          ? "another payment for this order timed out and its outcome is not known yet; nothing was charged. Retrying that payment with its own Idempotency-Key learns the outcome; until then the order takes no other payment, at most until its payment window closes"
          : undefined,
        retryAfter(outcome.retryAfterSeconds),
      );
  }
}

/** GET /api/orders/:orderId, POST .../pay, POST .../cancel: the owner's order and its life after the 202. */
export const orderRoutes = new Hono<AppEnv>()
  .get("/:orderId", validate("param", OrderIdParam), requireUser, limitPerUser, limitGlobally("order-reads"), async (c) => {
    const ids = orderIdsOf(c.env);
    const orderId = await ids.toInternal(c.req.valid("param").orderId);
    // D1 or Redis unreachable (an outage): the storefront polls this, so an honest 503, never a 500.
    const order = await orUnavailable("order status cannot be read right now", { orderId }, () =>
      ownOrder(c.env, redisFor(c.env), orderId, c.get("userId")),
    );
    return c.json(await view(order, ids));
  })
  .post(
    "/:orderId/pay",
    validate("param", OrderIdParam),
    requireUser,
    limitPerUser,
    limitGlobally("order-changes"),
    validate("json", PayBody),
    async (c) => {
      const ids = orderIdsOf(c.env);
      const orderId = await ids.toInternal(c.req.valid("param").orderId);
      const body = c.req.valid("json");
      const idempotency = await idempotencyOf(c, body);
      if (!idempotency) throw badRequest("an Idempotency-Key header is required to pay");
      const redis = redisFor(c.env);
      const provider = providerFor(c, redis);
      // D1 or Redis unreachable: nothing is charged twice when the buyer retries with the same key.
      const paid = await orUnavailable(
        "the payment cannot be taken right now; retry with the same Idempotency-Key",
        { orderId },
        async () => {
          const order = await ownOrder(c.env, redis, orderId, c.get("userId"));
          if (order.status === "pending") throw stillPending("ORDER_NOT_PAYABLE");
          const outcome = await payOrder(
            c.env.DB,
            provider,
            order,
            { idempotencyKey: idempotency.key, fingerprint: idempotency.fingerprint, paymentToken: body.paymentToken },
            settingsOf(c.env).PAYMENT_TIMEOUT_MS,
          );
          if (outcome.kind !== "paid") throw payError(outcome);
          return order;
        },
      );
      keepAliveOf(c)(ordersChanged(c.env));
      return c.json(await view({ ...paid, status: "paid", expiresAt: null }, ids));
    },
  )
  .post(
    "/:orderId/cancel",
    validate("param", OrderIdParam),
    requireUser,
    limitPerUser,
    limitGlobally("order-changes"),
    async (c) => {
      const ids = orderIdsOf(c.env);
      const orderId = await ids.toInternal(c.req.valid("param").orderId);
      const userId = c.get("userId");
      const redis = redisFor(c.env);
      const cancelled = await orUnavailable(
        "the order cannot be cancelled right now; try again shortly",
        { orderId },
        async () => {
          const done = await cancelOrder(c.env.DB, redis, orderId, userId);
          if (done) return { saleId: done.saleId, order: (await findOrderRecord(c.env.DB, orderId)) as OrderRecord };
          const order = await ownOrder(c.env, redis, orderId, userId);
          if (order.status === "pending") throw stillPending("ORDER_NOT_CANCELLABLE");
          const why =
            order.status === "awaiting_payment"
              ? "the payment window has closed"
              : `the order is ${order.status.replace("_", " ")}`;
          throw new ApiError("ORDER_NOT_CANCELLABLE", `only an order awaiting payment can be cancelled; ${why}`);
        },
      );
      keepAliveOf(c)(ordersChanged(c.env, [{ saleId: cancelled.saleId, userId }]));
      return c.json(await view(cancelled.order, ids));
    },
  );
