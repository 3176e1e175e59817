import { Hono, type MiddlewareHandler } from "hono";
import type { AppEnv } from "../http/app-env";
import { requireAdmin, requireUser } from "../http/auth";
import { ApiError, badRequest, refusalResponse, unavailable } from "../http/errors";
import { validate } from "../http/validate";
import { isStrategy } from "../lab/keys";
import { readPathExperiment } from "../lab/read-path";
import { createLabSale, labSaleReport } from "../lab/sale";
import { atomicCheckout } from "../lab/strategies/atomic";
import { durableObjectCheckout } from "../lab/strategies/durable-object";
import { durableObjectMergedCheckout } from "../lab/strategies/durable-object-merged";
import { lockCheckout } from "../lab/strategies/lock";
import { naiveCheckout } from "../lab/strategies/naive";
import { optimisticCheckout } from "../lab/strategies/optimistic";
import { redlockCheckout } from "../lab/strategies/redlock";
import type { LabOutcome, Strategy } from "../lab/strategy";
import { quorumRedisFor, redisFor } from "../redis/client";
import type { CheckoutAccepted } from "../shared/api-types";
import { STRATEGIES, type StrategyName } from "../shared/lab-strategies";
import type { LabSaleCreated, LabSaleReport } from "../shared/lab-types";
import { DEFAULT_VARIANT } from "../shared/limits";
import { log } from "../shared/log";
import { CreateLabSaleBody, LabSaleIdParam, ReadPathExperimentBody } from "../shared/requests";
import { settingsOf } from "../shared/settings";

/**
 * The oversell lab: the checkout contract under seven strategies, each selling from its own
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
};

const labEnabled: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!settingsOf(c.env).LAB_ENABLED) throw new ApiError("NOT_FOUND");
  await next();
};

export const labRoutes = new Hono<AppEnv>()
  .use(labEnabled)
  .post("/sales", requireAdmin, validate("json", CreateLabSaleBody), async (c) => {
    const { stock, objectHopMs } = c.req.valid("json");
    let id: string;
    try {
      id = await createLabSale({ redis: redisFor(c.env), objects: c.env.LAB_SALES }, stock, objectHopMs);
    } catch (err) {
      log.warn("lab sale creation failed", {}, err);
      throw unavailable("redis cannot be reached right now");
    }
    return c.json({ id, stock, strategies: [...STRATEGIES] } satisfies LabSaleCreated, 201);
  })
  // The read path's cache guards, on and off, by the D1 reads of many page views.
  .post("/read-path", requireAdmin, validate("json", ReadPathExperimentBody), async (c) => {
    const input = c.req.valid("json");
    if (input.scenario !== "absent" && input.saleId === undefined) throw badRequest("saleId: this scenario reads a sale");
    if (input.scenario === "absent" && input.page !== "sale") throw badRequest("scenario: absent ids are sale pages' only");
    try {
      return c.json(await readPathExperiment(c.env, input));
    } catch (err) {
      log.warn("lab read-path experiment failed", {}, err);
      throw unavailable("redis or D1 cannot be reached right now");
    }
  })
  .get("/sales/:labSaleId/report", requireAdmin, validate("param", LabSaleIdParam), async (c) => {
    const { labSaleId } = c.req.valid("param");
    let report: LabSaleReport | undefined;
    try {
      report = await labSaleReport({ redis: redisFor(c.env), objects: c.env.LAB_SALES }, labSaleId);
    } catch (err) {
      log.warn("lab report failed", { labSaleId }, err);
      throw unavailable("redis cannot be reached right now");
    }
    if (!report) throw new ApiError("SALE_NOT_FOUND", "no such lab sale");
    return c.json(report);
  })
  .post("/:strategy/sales/:labSaleId/checkout", validate("param", LabSaleIdParam), requireUser, async (c) => {
    const { labSaleId } = c.req.valid("param");
    const strategy = c.req.param("strategy");
    if (!isStrategy(strategy)) throw new ApiError("STRATEGY_NOT_FOUND", `the lab's strategies are ${STRATEGIES.join(", ")}`);
    if (strategy === "redlock" && !settingsOf(c.env).LOCK_QUORUM_NODES)
      throw unavailable("the redlock strategy needs LOCK_QUORUM_NODES");
    let result: LabOutcome;
    try {
      const keepAlive = (work: Promise<unknown>) => c.executionCtx.waitUntil(work);
      const backends = { redis: redisFor(c.env), objects: c.env.LAB_SALES, keepAlive, quorum: () => quorumRedisFor(c.env) };
      result = await strategies[strategy](backends, labSaleId, c.get("userId"));
    } catch (err) {
      // Fail closed, like the real checkout.
      log.warn("lab checkout: its store is unavailable", { strategy, labSaleId }, err);
      throw unavailable("the sale cannot be reached right now; try again shortly");
    }
    // The real checkout's answers, so the same clients and load scripts drive either.
    if (result.code !== "OK") return refusalResponse(c, result);
    return c.json(
      { orderId: result.orderId, status: "pending", quantity: 1, variant: DEFAULT_VARIANT } satisfies CheckoutAccepted,
      202,
    );
  });
