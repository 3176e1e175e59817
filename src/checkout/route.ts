import { Hono, type MiddlewareHandler } from "hono";
import type { AppEnv } from "../app-env";
import { requireUser } from "../http/auth";
import { ApiError, badRequest, notFound, rateLimited, unavailable } from "../http/errors";
import { limitPerUser } from "../limits/callers";
import { redisFor } from "../redis/client";
import { findSale } from "../sales/repository";
import { SALE_ID_PATTERN } from "../sales/sale";
import { enqueueOrders } from "../settlement/enqueue";
import { type LocalRefusal, localRefusal, memo } from "./isolate-memo";
import { type Reservation, reserve } from "./reserve";

function refusalError(refusal: LocalRefusal): ApiError {
  switch (refusal.code) {
    case "SOLD_OUT":
      return new ApiError(409, "SOLD_OUT", "the sale is sold out");
    case "ALREADY_PURCHASED":
      return new ApiError(409, "ALREADY_PURCHASED", `you already hold order ${refusal.orderId} in this sale`);
    case "SALE_NOT_STARTED":
      return new ApiError(409, "SALE_NOT_STARTED", `the sale starts at ${new Date(refusal.startsAt).toISOString()}`);
    case "SALE_ENDED":
      return new ApiError(409, "SALE_ENDED", "the sale has ended");
    case "SALE_NOT_FOUND":
      return notFound("SALE_NOT_FOUND", "no such sale");
    case "RATE_LIMITED":
      return rateLimited("the sale is admitting buyers at its configured rate; retry shortly", {
        limit: refusal.burst,
        retryAfterMs: refusal.retryAfterMs,
      });
  }
}

/** Remembers what a refusal from Redis teaches this isolate, and turns it into the API error. */
function learnFrom(saleId: string, userId: string, r: Exclude<Reservation, { outcome: "OK" }>, askedAt: number): ApiError {
  switch (r.outcome) {
    case "SOLD_OUT":
      memo.soldOut(saleId);
      return refusalError({ code: "SOLD_OUT" });
    case "ALREADY_PURCHASED":
      memo.bought(saleId, userId, r.orderId);
      return refusalError({ code: "ALREADY_PURCHASED", orderId: r.orderId });
    case "SALE_NOT_STARTED":
      memo.window(saleId, { startsAt: r.startsAt });
      return refusalError({ code: "SALE_NOT_STARTED", startsAt: r.startsAt });
    case "SALE_ENDED":
      memo.window(saleId, { endsAt: r.endsAt });
      return refusalError({ code: "SALE_ENDED" });
    case "SALE_NOT_FOUND":
      memo.notFound(saleId);
      return refusalError({ code: "SALE_NOT_FOUND" });
    case "RATE_LIMITED":
      memo.admission(saleId, r.admission);
      memo.throttled(saleId, askedAt + r.retryAfterMs, r.admission.burst);
      return refusalError({ code: "RATE_LIMITED", retryAfterMs: r.retryAfterMs, burst: r.admission.burst });
  }
}

/** Whether D1 has the sale; D1 unreachable is a 503 like Redis unreachable. */
async function saleRecorded(db: D1Database, saleId: string): Promise<boolean> {
  try {
    return (await findSale(db, saleId)) !== undefined;
  } catch (err) {
    console.warn("checkout: D1 unavailable", err);
    throw unavailable("the sale cannot be reached right now; try again shortly");
  }
}

/** The body is optional; when present it must be a JSON object (room for future options). */
async function assertWellFormedBody(text: string): Promise<void> {
  if (text.trim() === "") return;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw badRequest("the request body is not valid JSON");
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw badRequest("the request body must be a JSON object");
  }
}

/** Cheapest refusal first: a malformed sale id costs no token verification. */
const validSaleId: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (!SALE_ID_PATTERN.test(c.req.param("saleId") ?? "")) throw badRequest("the sale id must be a positive integer");
  await next();
};

export const checkoutRoutes = new Hono<AppEnv>().post("/:saleId/checkout", validSaleId, requireUser, limitPerUser, async (c) => {
  const saleId = c.req.param("saleId");
  await assertWellFormedBody(await c.req.text());
  const userId = c.get("userId");

  const refusal = localRefusal(saleId, userId);
  if (refusal) throw refusalError(refusal);

  let reservation: Reservation;
  const askedAt = Date.now();
  try {
    reservation = await reserve(redisFor(c.env), saleId, userId, {
      keepAlive: (work) => c.executionCtx.waitUntil(work),
      // One queue send for every order the merged call reserved, from the request that sent it.
      onReserved: (orders) => c.executionCtx.waitUntil(enqueueOrders(c.env.ORDERS, orders)),
    });
  } catch (err) {
    memo.admissionTokenUnused(saleId);
    // Fail closed: no answer, no promise. Unreachable means nothing was reserved; a late
    // answer may mean the script ran, and then the buyer's retry gets ALREADY_PURCHASED
    // with the order while the outbox makes sure it settles.
    console.warn("checkout: redis unavailable", err);
    throw unavailable("the sale cannot be reached right now; try again shortly");
  }
  // Redis spends an admission token only on a reservation: mirror that locally.
  if (reservation.outcome !== "OK") memo.admissionTokenUnused(saleId);
  if (reservation.outcome === "SALE_NOT_FOUND" && (await saleRecorded(c.env.DB, saleId))) {
    // D1 has the sale but Redis lost its live state: selling from a fresh copy could
    // oversell, so refuse until an operator restores it.
    console.error(`checkout: sale ${saleId} exists in D1 but not in Redis`);
    throw unavailable("the sale is temporarily unavailable", 30);
  }
  if (reservation.outcome !== "OK") throw learnFrom(saleId, userId, reservation, askedAt);

  const { orderId, remaining } = reservation;
  memo.bought(saleId, userId, orderId);
  memo.admission(saleId, reservation.admission);
  if (remaining === 0) memo.soldOut(saleId);
  return c.json({ orderId, status: "pending" as const }, 202);
});
