import { type Context, Hono } from "hono";
import { lineNamed } from "../admission/lane-lines";
import { queueStats } from "../admission/queue-stats";
import { linePage, lineRulesOf, readFreshProgress } from "../admission/waiting-room";
import type { AppEnv } from "../http/app-env";
import { requireAdmin } from "../http/auth";
import { clientAddress } from "../http/client-address";
import { ApiError, orUnavailable } from "../http/errors";
import { optionalBody, validate } from "../http/validate";
import { redisFor } from "../redis/client";
import { enableWaitingRoom, setAdmissionPaused, setAdmitRate, setNotice } from "../sales/live-controls";
import { findSale } from "../sales/repository";
import type { Sale } from "../sales/sale";
import { pushOrSchedule } from "../sales/sync-upkeep";
import type { QueuePlaces, QueueStats } from "../shared/api-types";
import type { Line } from "../shared/keys";
import { AdmissionHoldBody, AdmitRateBody, NoticeBody, QueueLineQuery, QueuePlacesQuery, SaleIdParam } from "../shared/requests";
import { settingsOf } from "../shared/settings";

/** Places per page of GET /admin/sales/:saleId/queue/places. */
const PLACES_PAGE = 1_000;

/** The sale as D1 records it, which must have a waiting room. */
async function queuedSale(db: D1Database, saleId: string): Promise<Sale> {
  const sale = await findSale(db, saleId);
  if (!sale) throw new ApiError("SALE_NOT_FOUND");
  if (sale.queue.mode === "off") throw new ApiError("QUEUE_OFF");
  return sale;
}

/** The line `lane` names: that presale lane's own (docs/lanes.md), or without one the public line. */
function lineOf(sale: Sale, lane: string | undefined): Line {
  const line = lineNamed(sale, lane);
  if (line === undefined) throw new ApiError("LANE_NOT_FOUND");
  return line;
}

/**
 * The sale's queue view after an operator's change recorded in D1 (or none: the same request
 * again changes nothing more). Redis' copy follows at once, or by itself once Redis answers
 * again; until then the view says it is pending, and its counts are null.
 */
async function changed(c: Context<AppEnv>, result: { sale: Sale; changed: boolean } | undefined): Promise<QueueStats> {
  if (!result) throw new ApiError("SALE_NOT_FOUND");
  const redis = redisFor(c.env);
  const pushed = await pushOrSchedule(redis, c.env.JOBS, result.sale);
  return queueStats(c.env.DB, redis, result.sale, lineRulesOf(settingsOf(c.env)), { readRedis: pushed !== "pending" });
}

/**
 * A drop's waiting room and live controls (docs/operating-a-drop.md): its counts and pace (a
 * presale lane's own line's with ?lane=) and who holds each place; admission held and resumed
 * with every place kept; the rate changed while live; a live sale put behind the waiting room;
 * a notice on every page of the sale. Each control is D1's first and logged with its time and
 * the admin's address, so it is made (and shown as pending) even while Redis is out, and
 * reaches Redis by itself when it is back. Each answers the sale's queue view.
 */
export const dropControlRoutes = new Hono<AppEnv>()
  // The console's waiting-room panel: one script call, which also moves the line forward.
  .get("/sales/:saleId/queue", requireAdmin, validate("param", SaleIdParam), validate("query", QueueLineQuery), async (c) => {
    const sale = await queuedSale(c.env.DB, c.req.valid("param").saleId);
    const line = lineOf(sale, c.req.valid("query").lane);
    return c.json(await queueStats(c.env.DB, redisFor(c.env), sale, lineRulesOf(settingsOf(c.env)), { line }));
  })
  .patch("/sales/:saleId/queue", requireAdmin, validate("param", SaleIdParam), validate("json", AdmitRateBody), async (c) => {
    const { saleId } = c.req.valid("param");
    await queuedSale(c.env.DB, saleId);
    const { admitPerSec } = c.req.valid("json");
    return c.json(await changed(c, await setAdmitRate(c.env.DB, saleId, admitPerSec, clientAddress(c))));
  })
  .post("/sales/:saleId/queue/pause", requireAdmin, validate("param", SaleIdParam), async (c) => {
    const { saleId } = c.req.valid("param");
    const { message } = await optionalBody(c, AdmissionHoldBody);
    await queuedSale(c.env.DB, saleId);
    return c.json(await changed(c, await setAdmissionPaused(c.env.DB, saleId, true, message, clientAddress(c))));
  })
  .post("/sales/:saleId/queue/resume", requireAdmin, validate("param", SaleIdParam), async (c) => {
    const { saleId } = c.req.valid("param");
    const { message } = await optionalBody(c, AdmissionHoldBody);
    await queuedSale(c.env.DB, saleId);
    return c.json(await changed(c, await setAdmissionPaused(c.env.DB, saleId, false, message, clientAddress(c))));
  })
  // A sale already queued stays as it is (the same request twice); one that cannot take a line says why.
  .post("/sales/:saleId/queue/enable", requireAdmin, validate("param", SaleIdParam), async (c) => {
    const { saleId } = c.req.valid("param");
    const before = await findSale(c.env.DB, saleId);
    if (!before) throw new ApiError("SALE_NOT_FOUND");
    if (before.draw) throw new ApiError("DRAW_ONLY", "this sale is sold by draw: it has no waiting room");
    if (before.queue.mode !== "off") return c.json(await changed(c, { sale: before, changed: false }));
    // A lane's own line is opened before its lane's start (docs/lanes.md): a sale selling by
    // its lanes is put behind the waiting room from its public start, when only the public line runs.
    if (before.lanes.length > 0 && Date.now() < before.startsAt)
      throw new ApiError("SALE_NOT_STARTED", "a sale with presale lanes goes behind the waiting room from its public start");
    const result = await enableWaitingRoom(c.env.DB, saleId, clientAddress(c));
    if (result && !result.changed) {
      if (result.sale.state === "cancelled") throw new ApiError("SALE_CANCELLED");
      if (result.sale.queue.mode === "off") throw new ApiError("SALE_ENDED");
    }
    return c.json(await changed(c, result));
  })
  .put("/sales/:saleId/notice", requireAdmin, validate("param", SaleIdParam), validate("json", NoticeBody), async (c) => {
    const { saleId } = c.req.valid("param");
    const { message } = c.req.valid("json");
    return c.json(await changed(c, await setNotice(c.env.DB, saleId, message, clientAddress(c))));
  })
  // Who holds each place, by user id: the shop's own list (anyone checks the draw from the
  // published one, src/routes/queue-draws.ts).
  .get(
    "/sales/:saleId/queue/places",
    requireAdmin,
    validate("param", SaleIdParam),
    validate("query", QueuePlacesQuery),
    async (c) => {
      const sale = await queuedSale(c.env.DB, c.req.valid("param").saleId);
      const { from: fromPlace, lane } = c.req.valid("query");
      const from = Number(fromPlace ?? 1);
      const line = lineOf(sale, lane);
      const redis = redisFor(c.env);
      const [page, progress] = await orUnavailable("redis cannot be reached right now", { saleId: sale.id }, () =>
        Promise.all([
          linePage(redis, sale.id, sale.buckets, line, from, PLACES_PAGE),
          readFreshProgress(redis, sale.id, sale.buckets, lineRulesOf(settingsOf(c.env)), line),
        ]),
      );
      return c.json({
        saleId: sale.id,
        drawn: page.drawn,
        admittedThrough: progress.admitted,
        places: page.userIds.map((userId, i) => ({ place: from + i, userId })),
        next: from + page.userIds.length <= progress.joined && page.userIds.length > 0 ? from + page.userIds.length : null,
      } satisfies QueuePlaces);
    },
  );
