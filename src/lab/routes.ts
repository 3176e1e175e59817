import { Hono, type MiddlewareHandler } from "hono";
import { z } from "zod";
import type { AppEnv } from "../app-env";
import { requireAdmin, requireUser } from "../http/auth";
import { ApiError, badRequest, notFound, unavailable } from "../http/errors";
import { validate } from "../http/validate";
import { redisFor } from "../redis/client";
import { isStrategy } from "./keys";
import type { LabOutcome, Strategy } from "./outcome";
import { type LabSaleReport, STRATEGIES, type StrategyName } from "./report-shape";
import { createLabSale, labSaleReport } from "./sale";
import { atomicCheckout } from "./strategies/atomic";
import { lockCheckout } from "./strategies/lock";
import { naiveCheckout } from "./strategies/naive";
import { optimisticCheckout } from "./strategies/optimistic";

/**
 * The oversell lab: the checkout contract under four strategies, each selling from its own
 * copy of a lab sale, with a report of what each really sold. Off unless LAB_ENABLED is
 * "true"; when off, every lab route answers exactly like a route that does not exist.
 */

const strategies: Record<StrategyName, Strategy> = {
  naive: naiveCheckout,
  lock: lockCheckout,
  optimistic: optimisticCheckout,
  atomic: atomicCheckout,
};

const LAB_SALE_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const CreateLabSale = z.object({ stock: z.number().int().min(1).max(1_000_000) }).strict();

const labEnabled: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (c.env.LAB_ENABLED !== "true") throw notFound("NOT_FOUND", "no such route");
  await next();
};

function labSaleId(id: string): string {
  if (!LAB_SALE_ID.test(id)) throw badRequest("the lab sale id must be a lowercase UUID");
  return id;
}

/** The real checkout's answers, so the same clients and load scripts drive either. */
function refusalError(result: Exclude<LabOutcome, { outcome: "OK" }>): ApiError {
  switch (result.outcome) {
    case "SOLD_OUT":
      return new ApiError(409, "SOLD_OUT", "the sale is sold out");
    case "ALREADY_PURCHASED":
      return new ApiError(409, "ALREADY_PURCHASED", "you already hold an order in this sale");
    case "SALE_NOT_FOUND":
      return notFound("SALE_NOT_FOUND", "no such lab sale");
    case "BUSY":
      return new ApiError(503, "BUSY", "too many checkouts contend for this sale; try again shortly", { "Retry-After": "1" });
  }
}

export const labRoutes = new Hono<AppEnv>()
  .use(labEnabled)
  .post("/sales", requireAdmin, validate("json", CreateLabSale), async (c) => {
    const { stock } = c.req.valid("json");
    let id: string;
    try {
      id = await createLabSale(redisFor(c.env), stock);
    } catch (err) {
      console.warn("lab sale creation failed", err);
      throw unavailable("redis cannot be reached right now");
    }
    return c.json({ id, stock, strategies: STRATEGIES }, 201);
  })
  .get("/sales/:labSaleId/report", requireAdmin, async (c) => {
    const id = labSaleId(c.req.param("labSaleId"));
    let report: LabSaleReport | undefined;
    try {
      report = await labSaleReport(redisFor(c.env), id);
    } catch (err) {
      console.warn("lab report failed", err);
      throw unavailable("redis cannot be reached right now");
    }
    if (!report) throw notFound("SALE_NOT_FOUND", "no such lab sale");
    return c.json(report);
  })
  .post("/:strategy/sales/:labSaleId/checkout", requireUser, async (c) => {
    const name = c.req.param("strategy");
    if (!isStrategy(name)) throw notFound("STRATEGY_NOT_FOUND", `the lab's strategies are ${STRATEGIES.join(", ")}`);
    const id = labSaleId(c.req.param("labSaleId"));
    let result: LabOutcome;
    try {
      const keepAlive = (work: Promise<unknown>) => c.executionCtx.waitUntil(work);
      result = await strategies[name](redisFor(c.env), id, c.get("userId"), keepAlive);
    } catch (err) {
      // Fail closed, like the real checkout.
      console.warn(`lab ${name} checkout: redis unavailable`, err);
      throw unavailable("the sale cannot be reached right now; try again shortly");
    }
    if (result.outcome !== "OK") throw refusalError(result);
    return c.json({ orderId: result.orderId, status: "pending" as const }, 202);
  });
