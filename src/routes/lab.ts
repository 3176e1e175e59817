import { Hono, type MiddlewareHandler } from "hono";
import { queuePosition } from "../admission/queue-position";
import { readTicket } from "../admission/signed-claims";
import { lineRulesOf, readProgress } from "../admission/waiting-room";
import { type AppEnv, keepAliveOf } from "../http/app-env";
import { requireAdmin, requireUser } from "../http/auth";
import { ApiError, badRequest, orUnavailable, refusalResponse, unavailable } from "../http/errors";
import { signingSecret } from "../http/secrets";
import { validate } from "../http/validate";
import { isStrategy } from "../lab/keys";
import { standingStream } from "../lab/queue-stream";
import { readPathExperiment } from "../lab/read-path";
import { createLabSale, labSaleReport } from "../lab/sale";
import { atomicCheckout } from "../lab/strategies/atomic";
import { designCardCheckout } from "../lab/strategies/design-card";
import { durableObjectCheckout } from "../lab/strategies/durable-object";
import { durableObjectMergedCheckout } from "../lab/strategies/durable-object-merged";
import { lockCheckout } from "../lab/strategies/lock";
import { naiveCheckout } from "../lab/strategies/naive";
import { optimisticCheckout } from "../lab/strategies/optimistic";
import { redlockCheckout } from "../lab/strategies/redlock";
import type { Strategy } from "../lab/strategy";
import { quorumRedisFor, redisFor } from "../redis/client";
import { bucketSplitOf, knownSale } from "../sales/known-sales";
import type { CheckoutAccepted } from "../shared/api-types";
import { PUBLIC_LINE } from "../shared/keys";
import { STRATEGIES, type StrategyName } from "../shared/lab-strategies";
import type { LabSaleCreated } from "../shared/lab-types";
import { DEFAULT_VARIANT } from "../shared/limits";
import { CreateLabSaleBody, LabSaleIdParam, QueueTicketHeader, ReadPathExperimentBody, SaleIdParam } from "../shared/requests";
import { settingsOf } from "../shared/settings";

/**
 * The oversell lab: the checkout contract under eight strategies, each selling from its own
 * copy of a lab sale, with a report of what each really sold. Off unless LAB_ENABLED is
 * "true"; when off, every lab route answers exactly like a route that does not exist.
 */

const strategies: Record<StrategyName, Strategy> = {
  naive: naiveCheckout,
  lock: lockCheckout,
  redlock: redlockCheckout,
  optimistic: optimisticCheckout,
  atomic: atomicCheckout,
  "durable-object": durableObjectCheckout,
  "durable-object-merged": durableObjectMergedCheckout,
  "design-card": designCardCheckout,
};

const REDIS_UNREACHABLE = "redis cannot be reached right now";

const labEnabled: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!settingsOf(c.env).LAB_ENABLED) throw new ApiError("NOT_FOUND");
  await next();
};

export const labRoutes = new Hono<AppEnv>()
  .use(labEnabled)
  .post("/sales", requireAdmin, validate("json", CreateLabSaleBody), async (c) => {
    const { stock, objectHopMs } = c.req.valid("json");
    const id = await orUnavailable(REDIS_UNREACHABLE, {}, () =>
      createLabSale({ redis: redisFor(c.env), objects: c.env.LAB_SALES }, stock, objectHopMs),
    );
    return c.json({ id, stock, strategies: [...STRATEGIES] } satisfies LabSaleCreated, 201);
  })
  // The read path's cache guards, on and off, by the D1 reads of many page views.
  .post("/read-path", requireAdmin, validate("json", ReadPathExperimentBody), async (c) => {
    const input = c.req.valid("json");
    if (input.scenario !== "absent" && input.saleId === undefined) throw badRequest("saleId: this scenario reads a sale");
    if (input.scenario === "absent" && input.page !== "sale") throw badRequest("scenario: absent ids are sale pages' only");
    return c.json(await orUnavailable("redis or D1 cannot be reached right now", {}, () => readPathExperiment(c.env, input)));
  })
  .get("/sales/:labSaleId/report", requireAdmin, validate("param", LabSaleIdParam), async (c) => {
    const { labSaleId } = c.req.valid("param");
    const report = await orUnavailable(REDIS_UNREACHABLE, { labSaleId }, () =>
      labSaleReport({ redis: redisFor(c.env), objects: c.env.LAB_SALES }, labSaleId),
    );
    if (!report) throw new ApiError("SALE_NOT_FOUND", "no such lab sale");
    return c.json(report);
  })
  // The waiting room's push channel, tried against polling: the standing as server-sent events.
  .get(
    "/sales/:saleId/queue/stream",
    validate("param", SaleIdParam),
    validate("header", QueueTicketHeader),
    requireUser,
    async (c) => {
      const { saleId } = c.req.valid("param");
      const userId = c.get("userId");
      const secret = signingSecret(c.env, "the lab's stream is not available");
      const ticket = await readTicket(secret, c.req.valid("header")["queue-ticket"], saleId, userId);
      if (!ticket) throw new ApiError("QUEUE_TICKET_INVALID");
      const place = ticket.p;
      if (place === null) throw badRequest("Queue-Ticket: the stream follows places already known; poll until placed");
      const line = ticket.l ?? PUBLIC_LINE;
      const keepAlive = keepAliveOf(c);
      const stream = standingStream(async () => {
        const split = bucketSplitOf(await knownSale(c.env.DB, saleId, keepAlive));
        const rules = lineRulesOf(settingsOf(c.env));
        const progress = await readProgress(redisFor(c.env), saleId, split.count, rules, keepAlive, line);
        return queuePosition(redisFor(c.env), secret, saleId, split, userId, line, place, progress);
      }, keepAlive);
      return new Response(stream, { headers: { "Content-Type": "text/event-stream", "Cache-Control": "no-store" } });
    },
  )
  .post("/:strategy/sales/:labSaleId/checkout", validate("param", LabSaleIdParam), requireUser, async (c) => {
    const { labSaleId } = c.req.valid("param");
    const strategy = c.req.param("strategy");
    if (!isStrategy(strategy)) throw new ApiError("STRATEGY_NOT_FOUND", `the lab's strategies are ${STRATEGIES.join(", ")}`);
    if (strategy === "redlock" && !settingsOf(c.env).LOCK_QUORUM_NODES)
      throw unavailable("the redlock strategy needs LOCK_QUORUM_NODES");
    const backends = {
      redis: redisFor(c.env),
      objects: c.env.LAB_SALES,
      keepAlive: keepAliveOf(c),
      quorum: () => quorumRedisFor(c.env),
    };
    // Fail closed, like the real checkout.
    const result = await orUnavailable("the sale cannot be reached right now; try again shortly", { strategy, labSaleId }, () =>
      strategies[strategy](backends, labSaleId, c.get("userId")),
    );
    // The real checkout's answers, so the same clients and load scripts drive either.
    if (result.code !== "OK") return refusalResponse(c, result);
    return c.json(
      { orderId: result.orderId, status: "pending", quantity: 1, variant: DEFAULT_VARIANT } satisfies CheckoutAccepted,
      202,
    );
  });
