import { type Context, Hono } from "hono";
import { codeHash, readCode } from "../admission/access-codes";
import { type AdmissionRefusal, type AdmissionRequest, admittedAtCheckout, checkAdmission } from "../admission/gate";
import { readPass } from "../admission/signed-claims";
import { countFunnel } from "../analytics/funnel";
import { CLOCK_SKEW_MS, localRefusal, memo } from "../checkout/isolate-memo";
import { countLocalRefusal } from "../checkout/local-outcomes";
import { firstReport, highestMinted, wentBack } from "../checkout/minted-sequence";
import { type Reservation, reserve } from "../checkout/reserve";
import { type AppEnv, keepAliveOf } from "../http/app-env";
import { requireUser } from "../http/auth";
import { callerAddress } from "../http/client-address";
import { badRequest, orUnavailable, refusalResponse, unavailable } from "../http/errors";
import { idempotencyKeyOf } from "../http/idempotency";
import { hasBody } from "../http/json-bodies";
import { countCodeFailure, limitPerUser, refuseCodeGuesser } from "../http/limits";
import { orderIdsOf, signingSecret } from "../http/secrets";
import { parseOptionalBody, validate } from "../http/validate";
import type { KeepAlive } from "../isolate/shared-work";
import { type Redis, redisFor } from "../redis/client";
import { bucketSplitOf, knownSale } from "../sales/known-sales";
import type { Sale } from "../sales/sale";
import { enqueueOrders } from "../settlement/enqueue";
import { reportBehind } from "../settlement/recovery";
import type { CheckoutAccepted } from "../shared/api-types";
import { ReplyLayoutError } from "../shared/checkout-reply";
import { type BucketSplit, SALE_STATS_TTL_SECONDS } from "../shared/keys";
import { DEFAULT_VARIANT } from "../shared/limits";
import { log } from "../shared/log";
import type { OrderIdCipher } from "../shared/public-order-id";
import type { Refusal } from "../shared/refusal";
import { CheckoutBody, SaleIdParam } from "../shared/requests";
import { settingsOf } from "../shared/settings";
import { currentTraceparent } from "../shared/trace";

/** What a 503 says when Redis or D1 cannot be reached: nothing was reserved. */
const UNREACHABLE = "the sale cannot be reached right now; try again shortly";
/** Until a sale Redis lost or holds behind is rebuilt (the heal runs as soon as that is safe). */
const REBUILD_RETRY_AFTER_SECONDS = 5;
/**
 * How fresh D1's record must be to say a sale Redis no longer holds is over: the waiters of
 * one merged call all ask, and one D1 read a second serves them all.
 */
const OVER_RECORD_MAX_AGE_MS = 1_000;

/** One checkout, as the request states it. */
interface Checkout {
  saleId: string;
  userId: string;
  quantity: number;
  variant: string | undefined;
  idempotencyKey: string | undefined;
  /** The Queue-Pass header, as sent. */
  passHeader: string | undefined;
  /** The Access-Code header, as sent. */
  codeHeader: string | undefined;
  env: Env;
  redis: Redis;
  keepAlive: KeepAlive;
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

const parseCheckoutBody = (text: string): CheckoutBody => parseOptionalBody(text, CheckoutBody);

async function checkoutOf(c: Context<AppEnv>, saleId: string): Promise<Checkout> {
  // Most checkouts send no body (one unit): reading the empty stream was ~4% of a warm refusal's profile.
  const { quantity, variant } = checkoutBody(hasBody(c.req.raw) ? await c.req.text() : "");
  return {
    saleId,
    userId: c.get("userId"),
    quantity,
    variant,
    idempotencyKey: idempotencyKeyOf(c),
    passHeader: c.req.header("Queue-Pass"),
    codeHeader: c.req.header("Access-Code"),
    env: c.env,
    redis: redisFor(c.env),
    keepAlive: keepAliveOf(c),
  };
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

/**
 * Step 1, no network: what this isolate already knows refuses the checkout (sold out, ended,
 * a repeat buyer...). A retry with a key gets Redis' own answer (202 with the order it
 * reserved), never the memo's 409.
 */
function refusedHere(checkout: Checkout): Refusal | undefined {
  const { saleId, userId, idempotencyKey, passHeader, codeHeader, variant, redis, keepAlive } = checkout;
  const refusal = localRefusal(saleId, userId, {
    trustBuyers: idempotencyKey === undefined,
    hasPass: passHeader !== undefined,
    hasCode: codeHeader !== undefined,
    variant,
  });
  if (refusal && worthCounting(refusal, Date.now())) countLocalRefusal(redis, saleId, refusal.code, keepAlive);
  return refusal;
}

/** What a verified pass tells checkout: its place, and the presale lane whose own line gave it (none: the public line). */
interface PassClaim {
  place: number;
  lane?: string;
}

/**
 * Step 2, a queued sale's pass: its signature binds it to this buyer and sale (checked here,
 * no network); whether it is admitted, unused, unexpired and of the line whose window is open,
 * lua/checkout.lua decides.
 */
async function passOf(checkout: Checkout): Promise<PassClaim | undefined | Refusal> {
  const { passHeader, env, saleId, userId } = checkout;
  if (passHeader === undefined) return undefined;
  const pass = await readPass(signingSecret(env, "queued checkouts are not available"), passHeader, saleId, userId);
  if (!pass) return { code: "QUEUE_PASS_INVALID" };
  return pass.l === undefined ? { place: pass.p } : { place: pass.p, lane: pass.l };
}

/**
 * Step 3, the door: deny rules and, for an unqueued sale, the human check (src/admission/;
 * a queued sale's pass carries its join's check), and the sale's bucket count, all from what
 * the isolate knows of the sale: no Redis command, so the script call stays checkout's one
 * round trip. D1 or siteverify unreachable is a 503: nothing reserved.
 */
async function admitted(
  c: Context<AppEnv>,
  checkout: Checkout,
): Promise<{ turnedAway?: AdmissionRefusal; buckets: BucketSplit; sale: Sale | null }> {
  const { saleId, userId, env, redis, keepAlive } = checkout;
  const request: AdmissionRequest = {
    saleId,
    caller: { address: callerAddress(c), userId, userAgent: c.req.header("User-Agent") },
    humanCheckToken: c.req.header("Human-Check"),
    keepAlive,
    stage: "checkout",
  };
  // A crowd's checkouts find both in the isolate: decided in step, without a promise.
  const admission: { turnedAway?: AdmissionRefusal; buckets: BucketSplit; sale: Sale | null } =
    admittedAtCheckout(saleId, request.caller) ??
    (await orUnavailable(UNREACHABLE, { saleId }, async () => {
      const { sale, turnedAway } = await checkAdmission(env.DB, request, settingsOf(env));
      return { turnedAway, buckets: bucketSplitOf(sale), sale: sale ?? null };
    }));
  if (admission.turnedAway) countLocalRefusal(redis, saleId, admission.turnedAway.counted, keepAlive);
  // A denied caller, answered as a person would be, is the funnel's quiet turn-away.
  if (admission.turnedAway?.counted === "DENIED") countFunnel("turned_away", saleId, 1);
  return admission;
}

/**
 * Step 3b, a presale lane's access code (docs/lanes.md): read and hashed here, checked, bound
 * and spent by lua/checkout.lua with the units. Sent only while the isolate's clock says a lane
 * may be open (the script decides by Redis' clock; from the public start a code is neither
 * checked nor spent). A caller past its allowance of refused codes gets 429 first; one that
 * cannot be a code at all is refused here, and counted like any invalid one.
 */
function codeOf(c: Context<AppEnv>, checkout: Checkout, sale: Sale | null): Promise<string> | Refusal | undefined {
  const { codeHeader, saleId, userId, keepAlive } = checkout;
  const now = Date.now();
  if (codeHeader === undefined || !sale || sale.lanes.length === 0 || now >= sale.startsAt + CLOCK_SKEW_MS) return undefined;
  refuseCodeGuesser(c, userId);
  const code = readCode(codeHeader);
  if (code !== undefined) return codeHash(saleId, code);
  if (now >= sale.startsAt - CLOCK_SKEW_MS) return undefined;
  countCodeFailure(c, userId, keepAlive);
  return { code: "ACCESS_CODE_INVALID" };
}

/**
 * Reports the sale missing or behind (Redis went back: `fence` stops it selling), once per
 * isolate per couple of seconds, in the background: the buyer's answer does not wait for it.
 * A report that fails is made again by the next checkout that notices, or by the cron.
 */
function reportLoss({ env, saleId, keepAlive }: Checkout, fence: boolean) {
  if (!firstReport(saleId)) return;
  keepAlive(
    reportBehind(env, saleId, "checkout", { knownSeq: highestMinted(saleId), fence }).catch((err) =>
      log.warn("checkout: reporting a sale behind failed; the cron will find it", { saleId }, err),
    ),
  );
}

/**
 * Step 4, the one script call, merged with the isolate's other checkouts of the sale: one
 * queue send for every order the call reserved, from the request that sent it. Fails closed:
 * unreachable means nothing was reserved; a late answer may mean the script ran, and then
 * the buyer's retry gets ALREADY_PURCHASED with the order while the outbox makes sure it
 * settles.
 */
async function reserved(
  checkout: Checkout,
  sale: { buckets: BucketSplit; lanes: readonly string[] },
  pass: PassClaim | undefined,
  accessCode: string | undefined,
): Promise<Reservation> {
  const { saleId, userId, quantity, variant, idempotencyKey, env, redis, keepAlive } = checkout;
  try {
    return await reserve(
      redis,
      saleId,
      {
        userId,
        quantity,
        variant,
        idempotencyKey,
        passPlace: pass?.place,
        passLane: pass?.lane,
        accessCode,
        traceparent: currentTraceparent(),
      },
      {
        keepAlive,
        buckets: sale.buckets,
        lanes: sale.lanes,
        onReserved: (orders, sequence) => {
          keepAlive(enqueueOrders(env.ORDERS, orders));
          // These orders are on their way and will be accounted for; the sale stops selling from here.
          const minted = { first: sequence - orders.length + 1, last: sequence };
          if (wentBack(saleId, minted)) reportLoss(checkout, true);
        },
      },
    );
  } catch (err) {
    memo.admissionTokenUnused(saleId);
    if (err instanceof ReplyLayoutError)
      log.error("checkout: lua/checkout.lua and this Worker disagree on the reply", { saleId }, err);
    else log.warn("checkout: redis unavailable", { saleId }, err);
    throw unavailable(UNREACHABLE);
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
 * Step 5, when Redis answered SALE_NOT_FOUND: D1 says whether the sale is over (then so is
 * every checkout of it: the refusal), does not hold it either (undefined: not found it is),
 * or holds it still open while Redis lost its live state (or it was found behind): selling
 * from a fresh copy could oversell, so it is refused until rebuilt.
 */
async function overInD1(checkout: Checkout): Promise<Refusal | undefined> {
  const { env, saleId, keepAlive } = checkout;
  const recorded = await orUnavailable(UNREACHABLE, { saleId }, () =>
    knownSale(env.DB, saleId, keepAlive, OVER_RECORD_MAX_AGE_MS),
  );
  if (!recorded) return undefined;
  const over = overRefusal(recorded, Date.now());
  if (over) return over;
  memo.admissionTokenUnused(saleId);
  reportLoss(checkout, false);
  throw unavailable("the sale is temporarily unavailable", REBUILD_RETRY_AFTER_SECONDS);
}

type NamingOrder = Extract<Refusal, { code: "ALREADY_PURCHASED" }> & { orderId: string };

/** ALREADY_PURCHASED naming the buyer's latest order, which the buyer is told by its public id. */
const namesOrder = (refusal: Refusal): refusal is NamingOrder =>
  refusal.code === "ALREADY_PURCHASED" && refusal.orderId !== undefined && refusal.orderId !== "";

/** A refusal as the buyer is told it; only one that names an order waits for the cipher (a crowd's refusals wait on no promise). */
async function withPublicId(refusal: NamingOrder, ids: OrderIdCipher): Promise<Refusal> {
  return { ...refusal, orderId: await ids.toPublic(refusal.orderId) };
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
    // Without the key of public ids an order could be reserved and not shown: refused before anything.
    const ids = orderIdsOf(c.env);
    const checkout = await checkoutOf(c, c.req.valid("param").saleId);
    const { saleId, userId, quantity, variant } = checkout;
    const known = refusedHere(checkout);
    if (known) return refusalResponse(c, namesOrder(known) ? await withPublicId(known, ids) : known);
    const pass = await passOf(checkout);
    if (pass !== undefined && "code" in pass) return refusalResponse(c, pass);
    const { turnedAway, buckets, sale } = await admitted(c, checkout);
    if (turnedAway) return refusalResponse(c, turnedAway.refusal);
    const code = codeOf(c, checkout, sale);
    if (code !== undefined && "code" in code) return refusalResponse(c, code);

    const askedAt = Date.now();
    const lanes = sale?.lanes.map((l) => l.name) ?? [];
    const answered = await reserved(checkout, { buckets, lanes }, pass, await code);
    const reservation = (answered.code === "SALE_NOT_FOUND" && (await overInD1(checkout))) || answered;
    memo.learn(saleId, userId, reservation, askedAt, variant);
    if (reservation.code === "ACCESS_CODE_INVALID") countCodeFailure(c, userId, checkout.keepAlive);
    if (reservation.code === "PER_USER_LIMIT_EXCEEDED" && quantity > reservation.limit) {
      throw badRequest(`quantity must be at most ${reservation.limit} in this sale`);
    }
    if (reservation.code !== "OK")
      return refusalResponse(c, namesOrder(reservation) ? await withPublicId(reservation, ids) : reservation);
    // The request's line of the order's trace (its traceId comes from the request's trace).
    if (!reservation.repeated) log.info("checkout: order reserved", { saleId, orderId: reservation.orderId, quantity });
    const accepted: CheckoutAccepted = {
      orderId: await ids.toPublic(reservation.orderId),
      status: "pending",
      quantity,
      variant: variant ?? DEFAULT_VARIANT,
    };
    return c.json(accepted, 202);
  },
);
