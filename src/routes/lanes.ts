import { type Context, Hono } from "hono";
import { listBypasses, mintBypass } from "../admission/bypass";
import { createBatch, listBatches, revokeBatch } from "../admission/code-batches";
import type { AppEnv } from "../http/app-env";
import { requireAdmin } from "../http/auth";
import { clientAddress } from "../http/client-address";
import { ApiError, badRequest, orUnavailable } from "../http/errors";
import { signingSecret } from "../http/secrets";
import { validate } from "../http/validate";
import { redisFor } from "../redis/client";
import { readLiveSale } from "../sales/live-state";
import { findSale } from "../sales/repository";
import type { Sale } from "../sales/sale";
import type { BypassLog, BypassPass, CodeBatchCreated, CodeBatches } from "../shared/api-types";
import { BatchIdParam, BypassBody, CodeBatchBody, LaneParam, SaleIdParam } from "../shared/requests";

/** What a 503 says when Redis or D1 cannot be reached: nothing changed. */
const UNREACHABLE = "the sale's lanes cannot be reached right now; try again shortly";

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

async function saleOf(c: Context<AppEnv>, saleId: string): Promise<Sale> {
  const sale = await orUnavailable(UNREACHABLE, { saleId }, () => findSale(c.env.DB, saleId));
  if (!sale) throw new ApiError("SALE_NOT_FOUND");
  return sale;
}

/** The codes as a spreadsheet takes them: one a row, with the batch's lane, uses and expiry. */
function codesCsv(batch: CodeBatchCreated): string {
  const rows = batch.codes.map((code) => `${code},${batch.lane},${batch.uses},${batch.expiresAt ?? ""}`);
  return `code,lane,uses,expires_at\r\n${rows.join("\r\n")}\r\n`;
}

/**
 * A sale's presale lanes, operated (docs/lanes.md): batches of access codes made (shown once),
 * listed with their counts and revoked, and staff passes past the line minted and listed.
 */
export const laneAdminRoutes = new Hono<AppEnv>()
  .post(
    "/sales/:saleId/lanes/:lane/codes",
    requireAdmin,
    validate("param", LaneParam),
    validate("json", CodeBatchBody),
    async (c) => {
      const { saleId, lane } = c.req.valid("param");
      const { count, uses, expiresAt } = c.req.valid("json");
      const sale = await saleOf(c, saleId);
      const laneStart = sale.lanes.find((l) => l.name === lane)?.startsAt;
      if (laneStart === undefined) throw new ApiError("LANE_NOT_FOUND", `this sale has no lane ${lane}`);
      if (Date.now() >= sale.startsAt || sale.state === "cancelled") throw new ApiError("LANES_OVER");
      const expires = expiresAt === undefined ? null : Date.parse(expiresAt);
      // A code buys (or, in a draw, is spent by its winner's offer) from its lane's start: one
      // that lapses before then could never be used.
      if (expires !== null && expires <= laneStart)
        throw badRequest(
          `expiresAt must be after the lane's start (${new Date(laneStart).toISOString()}): its codes are used from then`,
        );
      const made = await orUnavailable(UNREACHABLE, { saleId }, () =>
        createBatch(c.env.DB, redisFor(c.env), saleId, { lane, count, uses, expiresAt: expires }),
      );
      const batch: CodeBatchCreated = { batchId: made.batchId, lane, uses, expiresAt: iso(expires), codes: made.codes };
      c.header("Cache-Control", "no-store");
      if (c.req.header("Accept")?.includes("text/csv")) {
        return c.body(codesCsv(batch), 201, {
          "Content-Type": "text/csv; charset=utf-8",
          "Content-Disposition": `attachment; filename="sale-${saleId}-${lane}-${made.batchId}.csv"`,
        });
      }
      return c.json(batch, 201);
    },
  )
  .get("/sales/:saleId/codes", requireAdmin, validate("param", SaleIdParam), async (c) => {
    const { saleId } = c.req.valid("param");
    const sale = await saleOf(c, saleId);
    const redis = redisFor(c.env);
    const [batches, live] = await orUnavailable(UNREACHABLE, { saleId }, () =>
      Promise.all([listBatches(c.env.DB, redis, saleId), readLiveSale(redis, saleId)]),
    );
    const answer: CodeBatches = {
      batches: batches.map((b) => ({
        batchId: b.batchId,
        lane: b.lane,
        count: b.count,
        uses: b.uses,
        bound: b.bound,
        spent: b.spent,
        revoked: b.revokedAt !== null,
        expiresAt: iso(b.expiresAt),
        createdAt: new Date(b.createdAt).toISOString(),
      })),
      lanes: sale.lanes.map(({ name }) => {
        const of = batches.filter((b) => b.lane === name);
        const sum = (pick: (b: (typeof of)[number]) => number) => of.reduce((n, b) => n + pick(b), 0);
        return {
          name,
          issued: sum((b) => b.count),
          bound: sum((b) => b.bound),
          spent: sum((b) => b.spent),
          sold: live?.remainingByVariant.soldByLane?.[name] ?? 0,
        };
      }),
    };
    return c.json(answer);
  })
  .delete("/sales/:saleId/codes/:batchId", requireAdmin, validate("param", BatchIdParam), async (c) => {
    const { saleId, batchId } = c.req.valid("param");
    await saleOf(c, saleId);
    const revoked = await orUnavailable(UNREACHABLE, { saleId }, () => revokeBatch(c.env.DB, redisFor(c.env), saleId, batchId));
    if (!revoked) throw new ApiError("BATCH_NOT_FOUND");
    return c.body(null, 204);
  })
  .post("/sales/:saleId/bypass", requireAdmin, validate("param", SaleIdParam), validate("json", BypassBody), async (c) => {
    const { saleId } = c.req.valid("param");
    const { userId } = c.req.valid("json");
    const sale = await saleOf(c, saleId);
    if (sale.queue.mode === "off" || sale.draw) throw new ApiError("QUEUE_OFF", "this sale has no line to skip");
    if (Date.now() >= sale.endsAt || sale.state === "cancelled") throw new ApiError("SALE_ENDED");
    const secret = signingSecret(c.env, "staff passes are not available");
    const minted = await orUnavailable(UNREACHABLE, { saleId }, () =>
      mintBypass(c.env.DB, redisFor(c.env), secret, sale, userId, clientAddress(c)),
    );
    const answer: BypassPass = { userId, pass: minted.pass, expiresAt: new Date(minted.expiresAt).toISOString() };
    c.header("Cache-Control", "no-store");
    return c.json(answer, 201);
  })
  .get("/sales/:saleId/bypass", requireAdmin, validate("param", SaleIdParam), async (c) => {
    const { saleId } = c.req.valid("param");
    await saleOf(c, saleId);
    const passes = await orUnavailable(UNREACHABLE, { saleId }, () => listBypasses(c.env.DB, saleId));
    const answer: BypassLog = {
      passes: passes.map((p) => ({
        userId: p.userId,
        expiresAt: new Date(p.expiresAt).toISOString(),
        mintedAt: new Date(p.mintedAt).toISOString(),
        mintedFrom: p.mintedFrom,
      })),
    };
    return c.json(answer);
  });
