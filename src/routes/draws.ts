import { type Context, Hono } from "hono";
import { codeHash, readCode } from "../admission/access-codes";
import { findDrawRun } from "../admission/draw-records";
import { drawLeaves, drawView, myEntry } from "../admission/draw-views";
import { type EnterOutcome, enterDraw, withdrawEntry } from "../admission/draws";
import { checkAdmission, losesQuietly } from "../admission/gate";
import { type AppEnv, keepAliveOf } from "../http/app-env";
import { requireAdmin, requireUser } from "../http/auth";
import { callerAddress, clientAddress } from "../http/client-address";
import { ApiError, badRequest, orUnavailable, refusalResponse, unavailable } from "../http/errors";
import { countCodeFailure, limitGlobally, limitPerUser, refuseCodeGuesser } from "../http/limits";
import { optionalBody, validate } from "../http/validate";
import { redisFor } from "../redis/client";
import { knownSale } from "../sales/known-sales";
import type { Sale } from "../sales/sale";
import type { EntryAnswer } from "../shared/api-types";
import { DEFAULT_VARIANT } from "../shared/limits";
import { DrawEntriesQuery, EntryBody, SaleIdParam } from "../shared/requests";
import { settingsOf } from "../shared/settings";

/** What a 503 says when Redis or D1 cannot be reached: nothing changed. */
const UNREACHABLE = "the draw cannot be reached right now; try again shortly";

type DrawSale = Sale & { draw: NonNullable<Sale["draw"]> };

/** The sale, which must be sold by draw. */
async function drawSale(c: Context<AppEnv>, saleId: string): Promise<DrawSale> {
  const sale = await orUnavailable(UNREACHABLE, { saleId }, () => knownSale(c.env.DB, saleId, keepAliveOf(c)));
  if (!sale) throw new ApiError("SALE_NOT_FOUND");
  if (!sale.draw) throw new ApiError("NOT_A_DRAW");
  return sale as DrawSale;
}

/** What the script's refusals answer; entering and withdrawing share them. */
function enterRefused(outcome: Exclude<EnterOutcome, { entry: unknown }>, saleId: string): ApiError {
  switch (outcome.code) {
    case "NOT_ENTERED":
      return new ApiError("NOT_ENTERED");
    case "DRAW_NOT_OPEN":
      return new ApiError("DRAW_NOT_OPEN");
    case "DRAW_CLOSED":
      return new ApiError("DRAW_CLOSED");
    case "NOT_A_DRAW":
      return new ApiError("NOT_A_DRAW");
    case "SALE_CANCELLED":
      return new ApiError("SALE_CANCELLED");
    case "VARIANT_NOT_FOUND":
      return new ApiError("VARIANT_NOT_FOUND");
    case "ACCESS_CODE_INVALID":
      return new ApiError("ACCESS_CODE_INVALID");
    case "ACCESS_CODE_USED":
      return new ApiError("ACCESS_CODE_USED");
    case "SALE_NOT_FOUND":
    case "BUCKETS_CHANGED":
      // D1 has the sale and Redis does not (a loss the recovery rebuilds), or an edit just now.
      return unavailable(`the draw of sale ${saleId} is temporarily unavailable`, 5);
  }
}

/**
 * The hash of the Access-Code an entry sends, in a sale with presale lanes (docs/lanes.md,
 * "Lanes with a draw"): with one, a first entry enters the code's lane's draw. A caller past its
 * allowance of refused codes is refused 429 first; a header that cannot be a code is refused
 * here and counted like any invalid one. A sale without lanes ignores the header.
 */
async function entryCode(c: Context<AppEnv>, sale: Sale, userId: string): Promise<string | undefined> {
  const header = c.req.header("Access-Code");
  if (header === undefined || sale.lanes.length === 0) return undefined;
  refuseCodeGuesser(c, userId);
  const code = readCode(header);
  if (code === undefined) {
    countCodeFailure(c, userId, keepAliveOf(c));
    throw new ApiError("ACCESS_CODE_INVALID");
  }
  return codeHash(sale.id, code);
}

/**
 * A sale's draw (docs/draws.md): entering, changing or withdrawing an entry (one Upstash round
 * trip each), an entrant's own entry with its proof, and what anyone may check the draw
 * against. Before an entry: the isolate's and the global limits, deny rules and the human
 * check where the sale asks for it, one account one seat; a caller turned away quietly has
 * its entry taken, answered like any other, and never committed.
 */
export const drawRoutes = new Hono<AppEnv>()
  .post("/:saleId/entries", validate("param", SaleIdParam), requireUser, limitPerUser, limitGlobally("draw-entry"), async (c) => {
    const { saleId } = c.req.valid("param");
    const userId = c.get("userId");
    const { variant, quantity } = await optionalBody(c, EntryBody);
    const sale = await drawSale(c, saleId);
    if (sale.variants.length > 0 && variant === undefined) throw new ApiError("VARIANT_REQUIRED");
    if (quantity > sale.perUserLimit) throw badRequest(`quantity must be at most ${sale.perUserLimit} in this sale`);
    const accessCode = await entryCode(c, sale, userId);
    const address = callerAddress(c);
    const settings = settingsOf(c.env);
    const outcome = await orUnavailable(UNREACHABLE, { saleId }, async () => {
      const { turnedAway } = await checkAdmission(
        c.env.DB,
        {
          saleId,
          caller: { address, userId, userAgent: c.req.header("User-Agent") },
          humanCheckToken: c.req.header("Human-Check"),
          keepAlive: keepAliveOf(c),
          stage: "draw-entry",
        },
        settings,
      );
      if (turnedAway && !losesQuietly(turnedAway)) return turnedAway;
      return enterDraw(redisFor(c.env), sale, {
        userId,
        variant: variant ?? DEFAULT_VARIANT,
        quantity,
        ip: address ? clientAddress(c) : undefined,
        seats: { limit: settings.ACCOUNTS_PER_ADDRESS, ttlSeconds: Math.max(60, Math.ceil((sale.endsAt - Date.now()) / 1000)) },
        quietly: turnedAway !== undefined,
        codeHash: accessCode,
      });
    });
    if ("refusal" in outcome) return refusalResponse(c, outcome.refusal);
    if (outcome.code === "ACCESS_CODE_INVALID") countCodeFailure(c, userId, keepAliveOf(c));
    if (!("entry" in outcome)) throw enterRefused(outcome, saleId);
    const { entry } = outcome;
    const answer: EntryAnswer = {
      entry: {
        status: "entered",
        variant: entry.variant,
        quantity: entry.quantity,
        enteredAt: new Date(entry.enteredAt).toISOString(),
        ...(entry.lane !== "" && { lane: entry.lane }),
      },
      receipt: entry.receipt,
    };
    return c.json(answer, outcome.code === "ENTERED" ? 201 : 200);
  })
  .get("/:saleId/entries/mine", validate("param", SaleIdParam), requireUser, limitPerUser, async (c) => {
    const { saleId } = c.req.valid("param");
    const sale = await drawSale(c, saleId);
    const mine = await orUnavailable(UNREACHABLE, { saleId }, () => myEntry(c.env.DB, redisFor(c.env), sale, c.get("userId")));
    if (!mine) throw new ApiError("NOT_ENTERED");
    return c.json(mine);
  })
  .delete(
    "/:saleId/entries/mine",
    validate("param", SaleIdParam),
    requireUser,
    limitPerUser,
    limitGlobally("draw-entry"),
    async (c) => {
      const { saleId } = c.req.valid("param");
      const sale = await drawSale(c, saleId);
      const outcome = await orUnavailable(UNREACHABLE, { saleId }, () => withdrawEntry(redisFor(c.env), sale, c.get("userId")));
      if (!("entry" in outcome)) throw enterRefused(outcome, saleId);
      return c.body(null, 204);
    },
  )
  .get("/:saleId/draw", validate("param", SaleIdParam), async (c) => {
    const { saleId } = c.req.valid("param");
    const sale = await drawSale(c, saleId);
    c.header("Cache-Control", "public, max-age=1");
    return c.json(await orUnavailable(UNREACHABLE, { saleId }, () => drawView(c.env.DB, redisFor(c.env), sale)));
  })
  .get("/:saleId/draw/entries", validate("param", SaleIdParam), validate("query", DrawEntriesQuery), async (c) => {
    const { saleId } = c.req.valid("param");
    const sale = await drawSale(c, saleId);
    const cursor = Number(c.req.valid("query").cursor ?? 0);
    const page = await orUnavailable(UNREACHABLE, { saleId }, () => drawLeaves(c.env.DB, sale, cursor));
    if (!page) throw new ApiError("DRAW_NOT_CLOSED", "the entries are not committed yet");
    c.header("Cache-Control", "public, max-age=1");
    return c.json(page);
  });

/** POST /admin/sales/:saleId/draw: runs the draw now (the cron does after the close by itself). */
export const drawAdminRoutes = new Hono<AppEnv>().post(
  "/sales/:saleId/draw",
  requireAdmin,
  validate("param", SaleIdParam),
  async (c) => {
    const { saleId } = c.req.valid("param");
    const sale = await drawSale(c, saleId);
    if (Date.now() < sale.draw.closesAt) throw new ApiError("DRAW_NOT_CLOSED");
    const view = await orUnavailable(UNREACHABLE, { saleId }, async () => {
      if ((await findDrawRun(c.env.DB, saleId))?.phase !== "drawn")
        await c.env.JOBS.send({ kind: "draw-step", saleId }, { contentType: "json" });
      return drawView(c.env.DB, redisFor(c.env), sale);
    });
    return c.json(view, 202);
  },
);
