import { Hono } from "hono";
import * as z from "zod/mini";
import { AdmissionUnavailable, admissionRefusal, admittedAtCheckout } from "../admission/gate";
import { salePolicy } from "../admission/sale-policy";
import { readPass } from "../admission/signed-claims";
import { localRefusal, memo } from "../checkout/isolate-memo";
import { countLocalRefusal } from "../checkout/local-outcomes";
import { firstReport, highestMinted, wentBack } from "../checkout/minted-sequence";
import { ReplyLayoutError } from "../checkout/reply";
import { type Reservation, reserve } from "../checkout/reserve";
import type { AppEnv } from "../http/app-env";
import { requireUser } from "../http/auth";
import { limitPerUser } from "../http/caller-limits";
import { badRequest, refusalResponse, unavailable } from "../http/errors";
import { idempotencyKeyOf } from "../http/idempotency";
import { hasBody } from "../http/json-bodies";
import { signingSecret } from "../http/secrets";
import { invalid, validate } from "../http/validate";
import { IsolateCache } from "../isolate/isolate-cache";
import type { KeepAlive } from "../isolate/shared-work";
import { redisFor } from "../redis/client";
import { findSale } from "../sales/repository";
import type { Sale } from "../sales/sale";
import { enqueueOrders } from "../settlement/enqueue";
import { reportBehind } from "../settlement/recovery";
import type { CheckoutAccepted } from "../shared/api-types";
import { SALE_STATS_TTL_SECONDS } from "../shared/keys";
import { DEFAULT_VARIANT } from "../shared/limits";
import { log } from "../shared/log";
import type { Refusal } from "../shared/refusal";
import { CheckoutBody, SaleIdParam } from "../shared/requests";
import { settingsOf } from "../shared/settings";

/**
 * D1's record of sales Redis answered SALE_NOT_FOUND for, a second per isolate: the waiters of
 * one merged call all get that answer, and one D1 read serves them all.
 */
const recordedSales = new IsolateCache<Sale | null>({ ttlMs: 1_000, maxEntries: 1_000 });

/** The sale as D1 records it; D1 unreachable is a 503 like Redis unreachable. */
async function recordedSale(db: D1Database, saleId: string, keepAlive: KeepAlive): Promise<Sale | undefined> {
  try {
    return (await recordedSales.getOrLoad(saleId, async () => (await findSale(db, saleId)) ?? null, keepAlive)) ?? undefined;
  } catch (err) {
    log.warn("checkout: D1 unavailable", { saleId }, err);
    throw unavailable("the sale cannot be reached right now; try again shortly");
  }
}

/**
 * Why a sale Redis no longer holds refuses every checkout, when D1 says it is over: it was
 * cancelled, or it ended (an ended, settled sale is archived and its keys removed).
 */
function overRefusal(sale: Sale, now: number): Refusal | undefined {
  if (sale.state === "cancelled") return { code: "SALE_CANCELLED" };
  if (now >= sale.endsAt) return { code: "SALE_ENDED", endsAt: sale.endsAt };
  return undefined;
}

/**
 * Refusals the isolate answers alone are counted for the console's chart, except an id no
 * sale has (checkout.lua never counts those: a probe of made-up ids must write no keys) and
 * a sale that ended longer ago than the counters live: nobody charts it, and its keys may be
 * archived away, so counting would only write keys back.
 */
function worthCounting(refusal: Refusal, now: number): boolean {
  if (refusal.code === "SALE_NOT_FOUND") return false;
  return refusal.code !== "SALE_ENDED" || now - refusal.endsAt < SALE_STATS_TTL_SECONDS * 1000;
}

/** Until a sale Redis lost or holds behind is rebuilt (the heal runs as soon as that is safe). */
const REBUILD_RETRY_AFTER_SECONDS = 5;

/**
 * Reports the sale missing or behind (Redis went back: `fence` stops it selling), once per
 * isolate per couple of seconds, in the background: the buyer's answer does not wait for it.
 * A report that fails is made again by the next checkout that notices, or by the cron.
 */
function reportLoss(env: Env, saleId: string, keepAlive: (work: Promise<unknown>) => void, fence: boolean) {
  if (!firstReport(saleId)) return;
  keepAlive(
    reportBehind(env, saleId, "checkout", { knownSeq: highestMinted(saleId), fence }).catch((err) =>
      log.warn("checkout: reporting a sale behind failed; the cron will find it", { saleId }, err),
    ),
  );
}

/**
 * Deny rules and, for an unqueued sale, the human check (src/admission/gate.ts; a queued
 * sale's pass carries its join's check), and the sale's bucket count
 * (src/admission/sale-policy.ts, read by the gate too): no Redis command, so the script call
 * stays checkout's one round trip. D1 or siteverify unreachable is a 503: nothing reserved.
 */
async function admitted(env: Env, request: Parameters<typeof admissionRefusal>[1]) {
  // A crowd's checkouts find both in the isolate: decided in step, without a promise.
  const atOnce = admittedAtCheckout(request.saleId, request.caller);
  if (atOnce) return { turnedAway: undefined, buckets: atOnce.buckets };
  try {
    const [turnedAway, policy] = await Promise.all([
      admissionRefusal(env.DB, request, settingsOf(env)),
      salePolicy(env.DB, request.saleId, request.keepAlive),
    ]);
    // No such sale in D1: Redis answers SALE_NOT_FOUND whatever the count.
    return { turnedAway, buckets: policy?.buckets ?? 1 };
  } catch (err) {
    if (!(err instanceof AdmissionUnavailable)) throw err;
    log.warn("checkout: admission checks unavailable", { saleId: request.saleId }, err);
    throw unavailable(err.message);
  }
}

/** A checkout sent without a body, as most are: one unit, no variant, parsed once per isolate. */
let noBody: Readonly<CheckoutBody> | undefined;

/** The body is optional (one unit); when present it must be a JSON object this route can read. */
function checkoutBody(text: string): Readonly<CheckoutBody> {
  if (text === "") {
    noBody ??= Object.freeze(parseCheckoutBody("{}"));
    return noBody;
  }
  return parseCheckoutBody(text);
}

function parseCheckoutBody(text: string): CheckoutBody {
  let parsed: unknown = {};
  if (text.trim() !== "") {
    try {
      parsed = JSON.parse(text);
    } catch {
      throw badRequest("the request body is not valid JSON");
    }
  }
  const result = z.safeParse(CheckoutBody, parsed);
  if (!result.success) throw invalid(result.error.issues);
  return result.data;
}

/**
 * POST /api/sales/:saleId/checkout. Cheapest refusal first: a malformed sale id costs no
 * token verification, a refusal this isolate already knows costs no network, and
 * everything that must be atomic is one merged script call.
 */
export const checkoutRoutes = new Hono<AppEnv>().post(
  "/:saleId/checkout",
  validate("param", SaleIdParam),
  requireUser,
  limitPerUser,
  async (c) => {
    const { saleId } = c.req.valid("param");
    // Most checkouts send no body (one unit): reading the empty stream was ~4% of a warm refusal's profile.
    const { quantity, variant } = checkoutBody(hasBody(c.req.raw) ? await c.req.text() : "");
    const idempotencyKey = idempotencyKeyOf(c);
    const userId = c.get("userId");
    const redis = redisFor(c.env);
    const keepAlive = (work: Promise<unknown>) => c.executionCtx.waitUntil(work);

    // A retry with a key gets Redis' own answer (202 with the order it reserved), never the memo's 409.
    const passHeader = c.req.header("Queue-Pass");
    const refusal = localRefusal(saleId, userId, {
      trustBuyers: idempotencyKey === undefined,
      hasPass: passHeader !== undefined,
      variant,
    });
    if (refusal) {
      if (worthCounting(refusal, Date.now())) countLocalRefusal(redis, saleId, refusal.code, keepAlive);
      return refusalResponse(c, refusal);
    }
    // A queued sale's pass: its signature binds it to this buyer and sale (checked here, no
    // network); whether it is admitted, unused and unexpired, lua/checkout.lua decides.
    const pass =
      passHeader === undefined
        ? undefined
        : await readPass(signingSecret(c.env, "queued checkouts are not available"), passHeader, saleId, userId);
    if (passHeader !== undefined && !pass) return refusalResponse(c, { code: "QUEUE_PASS_INVALID" });

    const { turnedAway, buckets } = await admitted(c.env, {
      saleId,
      caller: { ip: c.req.header("CF-Connecting-IP"), userId, userAgent: c.req.header("User-Agent") },
      humanCheckToken: c.req.header("Human-Check"),
      keepAlive,
      stage: "checkout",
    });
    if (turnedAway) {
      countLocalRefusal(redis, saleId, turnedAway.counted, keepAlive);
      return refusalResponse(c, turnedAway.refusal);
    }

    let reservation: Reservation;
    const askedAt = Date.now();
    try {
      reservation = await reserve(
        redis,
        saleId,
        { userId, quantity, variant, idempotencyKey, passPlace: pass?.p },
        {
          keepAlive,
          buckets,
          // One queue send for every order the merged call reserved, from the request that sent it.
          onReserved: (orders, sequence) => {
            c.executionCtx.waitUntil(enqueueOrders(c.env.ORDERS, orders));
            // These orders are on their way and will be accounted for; the sale stops selling from here.
            const minted = { first: sequence - orders.length + 1, last: sequence };
            if (wentBack(saleId, minted)) reportLoss(c.env, saleId, keepAlive, true);
          },
        },
      );
    } catch (err) {
      memo.admissionTokenUnused(saleId);
      // Fail closed: no answer, no promise. Unreachable means nothing was reserved; a late
      // answer may mean the script ran, and then the buyer's retry gets ALREADY_PURCHASED
      // with the order while the outbox makes sure it settles.
      if (err instanceof ReplyLayoutError)
        log.error("checkout: lua/checkout.lua and this Worker disagree on the reply", { saleId }, err);
      else log.warn("checkout: redis unavailable", { saleId }, err);
      throw unavailable("the sale cannot be reached right now; try again shortly");
    }
    const recorded = reservation.code === "SALE_NOT_FOUND" ? await recordedSale(c.env.DB, saleId, keepAlive) : undefined;
    if (recorded) {
      const over = overRefusal(recorded, Date.now());
      if (over) {
        memo.learn(saleId, userId, over, askedAt);
        return refusalResponse(c, over);
      }
      memo.admissionTokenUnused(saleId);
      // D1 has the sale, still open, but Redis lost its live state (or it was found behind):
      // selling from a fresh copy could oversell, so refuse until it is rebuilt.
      reportLoss(c.env, saleId, keepAlive, false);
      throw unavailable("the sale is temporarily unavailable", REBUILD_RETRY_AFTER_SECONDS);
    }
    memo.learn(saleId, userId, reservation, askedAt, variant);
    if (reservation.code === "PER_USER_LIMIT_EXCEEDED" && quantity > reservation.limit) {
      throw badRequest(`quantity must be at most ${reservation.limit} in this sale`);
    }
    if (reservation.code !== "OK") return refusalResponse(c, reservation);
    return c.json(
      {
        orderId: reservation.orderId,
        status: "pending",
        quantity,
        variant: variant ?? DEFAULT_VARIANT,
      } satisfies CheckoutAccepted,
      202,
    );
  },
);
