import { Hono } from "hono";
import { type AppEnv, keepAliveOf } from "../http/app-env";
import { requireAdmin } from "../http/auth";
import { ApiError, badRequest, orUnavailable, retryAfter } from "../http/errors";
import { assertSameRequest, type Idempotency, idempotencyOf } from "../http/idempotency";
import { validate } from "../http/validate";
import type { KeepAlive } from "../isolate/shared-work";
import { cancelSaleOrders } from "../orders/lifecycle";
import { ordersChanged } from "../orders/order-changes";
import { redisFor } from "../redis/client";
import { forgetSale } from "../sales/known-sales";
import { appliedVersion, readLiveSale } from "../sales/live-state";
import { changeSaleState, type EditRefusal, editSale, type SaleEdit } from "../sales/operations";
import { readOutcomeSeries } from "../sales/outcomes";
import { findSale, findSaleByIdempotencyKey, insertSale } from "../sales/repository";
import {
  adminSaleView,
  type Remaining,
  type Sale,
  type SaleState,
  saleDrawOf,
  saleLanesOf,
  syncPendingOf,
  totalOnly,
  untouched,
} from "../sales/sale";
import { pushOrSchedule } from "../sales/sync-upkeep";
import { waitingRoomFrom } from "../sales/waiting-room-settings";
import { reconciliationReport } from "../settlement/report";
import { type RestoreOutcome, restoreSale } from "../settlement/restore";
import type { AdminSaleView, ReconciliationReport, RestoreReport, SaleStats } from "../shared/api-types";
import { bucketsFor } from "../shared/keys";
import { DEFAULT_ADMISSION } from "../shared/limits";
import { log } from "../shared/log";
import { CreateSaleBody, createdStock, SaleIdParam, UpdateSaleBody } from "../shared/requests";
import { settingsOf } from "../shared/settings";

async function recordedSale(db: D1Database, saleId: string): Promise<Sale> {
  const sale = await findSale(db, saleId);
  if (!sale) throw new ApiError("SALE_NOT_FOUND");
  return sale;
}

/** Redis unreachable (or slow) reads as 503, like everywhere else. */
const REDIS_UNREACHABLE = "redis cannot be reached right now";

/** The sale an earlier create with this key made; refused when that create's body differed. */
async function replayedSale(db: D1Database, idempotency: Idempotency): Promise<Sale | undefined> {
  const found = await findSaleByIdempotencyKey(db, idempotency.key);
  if (found) assertSameRequest(idempotency, found.fingerprint);
  return found?.sale;
}

/**
 * D1 has the change; Redis' copy and what this isolate knows of the sale follow. When Redis
 * cannot be reached the change stands in D1 and is pushed again by itself (src/sales/sync-upkeep.ts):
 * "pending", which the answer's syncPending shows.
 */
async function propagate(env: Env, sale: Sale, what: string): Promise<"synced" | "pending"> {
  const outcome = await pushOrSchedule(redisFor(env), env.JOBS, sale);
  if (outcome === "missing") {
    throw new ApiError(
      "SALE_NOT_LOADED",
      `the ${what} is recorded, but Redis lost the sale's live state: POST /admin/sales/${sale.id}/restore rebuilds it from D1, this change included`,
    );
  }
  return outcome;
}

/**
 * The admin's view after a change, with live remaining stock (none once archived, nor when
 * Redis was just found unreachable: asking again would wait out its timeout), and its version as ETag.
 */
async function changedView(env: Env, sale: Sale, pushed: "synced" | "pending"): Promise<{ view: AdminSaleView; etag: string }> {
  const live =
    sale.archivedAt === null && pushed === "synced"
      ? await readLiveSale(redisFor(env), sale.id).catch(() => undefined)
      : undefined;
  const view = adminSaleView(sale, live?.remainingByVariant ?? totalOnly(0), Date.now(), syncPendingOf(sale, live?.version));
  return { view, etag: `"${sale.version}"` };
}

/** The sale's remaining stock as the report read it (the whole stock where Redis holds none of it). */
function reportedRemaining(sale: Sale, report: ReconciliationReport): Remaining {
  const byVariant = Object.entries(report.variants).map(([id, v]) => [id, v.remaining ?? v.stock]);
  return { total: report.redis.remaining ?? sale.stock, byVariant: Object.fromEntries(byVariant) };
}

/** If-Match: "<version>" (an ETag this API gave); absent: any version. */
function ifMatchVersion(header: string | undefined): number | undefined {
  if (header === undefined) return undefined;
  const match = /^(?:W\/)?"(\d{1,15})"$/.exec(header.trim());
  if (!match) throw badRequest('If-Match must be an ETag this API gave, such as "3"');
  return Number(match[1]);
}

function editRefused(refusal: Exclude<EditRefusal, { code: "SALE_NOT_FOUND" }>): ApiError {
  switch (refusal.code) {
    case "VERSION_MISMATCH":
      return new ApiError("PRECONDITION_FAILED", `the sale changed since: it is at version ${refusal.version}`, {
        ETag: `"${refusal.version}"`,
      });
    case "SALE_STARTED":
      return new ApiError("SALE_STARTED");
    case "QUEUE_OPEN":
      return new ApiError("QUEUE_OPEN");
    case "DRAW_OPEN":
      return new ApiError("DRAW_OPEN");
    case "SALE_CLOSED":
      return new ApiError("SALE_CLOSED");
    case "STOCK_DECREASE": {
      const of = refusal.variant === undefined ? "" : ` of variant ${refusal.variant}`;
      return new ApiError("STOCK_DECREASE", `stock${of} only grows: it is ${refusal.stock}`);
    }
    case "INVALID_VARIANTS":
      return badRequest(`variants: ${refusal.message}`);
    case "INVALID_WINDOW":
      return badRequest(`${refusal.field}: ${refusal.message}`);
    case "NO_ID_SLOT":
      return new ApiError("NO_ID_SLOT");
    case "EDIT_CONFLICT":
      return new ApiError("EDIT_CONFLICT");
  }
}

/** The body's fields as the sale's, times as epoch ms; fields absent stay absent. */
const changesOf = ({ startsAt, endsAt, draw, lanes, ...rest }: UpdateSaleBody): SaleEdit => ({
  ...rest,
  ...(lanes !== undefined && { lanes: saleLanesOf(lanes) }),
  ...(startsAt !== undefined && { startsAt: Date.parse(startsAt) }),
  ...(endsAt !== undefined && { endsAt: Date.parse(endsAt) }),
  ...(draw !== undefined && { draw: saleDrawOf(draw) }),
});

/**
 * Pause, resume or cancel, propagated like an edit; the same request twice changes nothing
 * more. A cancelled sale's orders that hold units are cancelled (paid ones marked for a
 * refund) and their units given back; what this request cannot finish, the sweep does.
 */
async function changeState(
  env: Env,
  saleId: string,
  state: SaleState,
  keepAlive: KeepAlive,
): Promise<{ view: AdminSaleView; etag: string }> {
  const result = await changeSaleState(env.DB, saleId, state);
  if ("code" in result) {
    if (result.code === "SALE_NOT_FOUND") throw new ApiError("SALE_NOT_FOUND");
    throw new ApiError("SALE_CANCELLED", "the sale was cancelled: it can be neither paused nor resumed");
  }
  const pushed = await propagate(env, result.sale, "change");
  if (state === "cancelled") {
    const cancelled = await cancelSaleOrders(env.DB, redisFor(env), saleId).catch((err) => {
      log.warn("cancelled sale's orders left to the sweep", { saleId }, err);
      return [];
    });
    // The sale's cancellation raised events of its own, whatever its orders did.
    keepAlive(ordersChanged(env, cancelled));
  }
  return changedView(env, result.sale, pushed);
}

/** What a restore did, or why it did not (src/settlement/restore.ts), as the API answers it. */
function restoreAnswer(saleId: string, outcome: RestoreOutcome): RestoreReport {
  switch (outcome.kind) {
    case "restored": {
      const { remaining, minted, buyers, returned } = outcome;
      return { saleId, remaining, minted, buyers, returned };
    }
    case "not-found":
      throw new ApiError("SALE_NOT_FOUND");
    case "archived":
      throw new ApiError("SALE_ARCHIVED");
    case "loaded":
      throw new ApiError("SALE_LOADED");
    case "busy":
      throw new ApiError("RESTORE_IN_PROGRESS");
    case "in-flight": {
      const seconds = Math.ceil(outcome.retryAfterMs / 1000);
      throw new ApiError(
        "ORDERS_IN_FLIGHT",
        `orders accepted before Redis lost the sale are still reaching D1; restore in ${seconds} s`,
        retryAfter(seconds),
      );
    }
    case "interrupted":
      throw new ApiError("RESTORE_INTERRUPTED");
  }
}

/** A new sale recorded in D1 (or the one an earlier create with this Idempotency-Key made), and whether it is new. */
async function createdSale(
  env: Env,
  body: CreateSaleBody,
  idempotency: Idempotency | null,
): Promise<{ sale: Sale; created: boolean }> {
  const replayed = idempotency && (await replayedSale(env.DB, idempotency));
  if (replayed) return { sale: replayed, created: false };
  const queue = await waitingRoomFrom(body.queue);
  const stock = createdStock(body);
  const inserted = await insertSale(
    env.DB,
    {
      name: body.name,
      stock,
      startsAt: Date.parse(body.startsAt),
      endsAt: Date.parse(body.endsAt),
      admission: body.admission ?? { ...DEFAULT_ADMISSION },
      price: body.price,
      currency: body.currency,
      paymentWindowSec: body.paymentWindowSec,
      perUserLimit: body.perUserLimit,
      humanCheck: body.humanCheck,
      description: body.description,
      imageUrl: body.imageUrl ?? null,
      queue,
      buckets: bucketsFor(stock, settingsOf(env).REDIS_MAX_RECORD_BYTES, queue.mode !== "off" || body.draw !== null),
      variants: (body.variants ?? []).map((v) => ({ id: v.id, label: v.label, stock: v.stock, price: v.price ?? null })),
      draw: saleDrawOf(body.draw),
      lanes: saleLanesOf(body.lanes),
    },
    idempotency,
  );
  if (inserted) return { sale: inserted, created: true };
  // A concurrent retry with the same key may have won the insert.
  const raced = idempotency && (await replayedSale(env.DB, idempotency));
  if (raced) return { sale: raced, created: false };
  throw new ApiError("NO_ID_SLOT");
}

export const adminRoutes = new Hono<AppEnv>()
  .use(requireAdmin)
  .post("/sales", validate("json", CreateSaleBody), async (c) => {
    const body = c.req.valid("json");
    const { sale, created } = await createdSale(c.env, body, await idempotencyOf(c, body));
    // D1 is the record; Redis is loaded after it, now or (Redis unreachable) by itself later,
    // or by a retry with the same Idempotency-Key.
    const pushed = await propagate(c.env, sale, "sale");
    return c.json(adminSaleView(sale, untouched(sale), Date.now(), pushed === "pending"), created ? 201 : 200, {
      ETag: `"${sale.version}"`,
    });
  })
  .patch("/sales/:saleId", validate("param", SaleIdParam), validate("json", UpdateSaleBody), async (c) => {
    const { saleId } = c.req.valid("param");
    const ifVersion = ifMatchVersion(c.req.header("If-Match"));
    const result = await editSale(
      c.env.DB,
      saleId,
      changesOf(c.req.valid("json")),
      settingsOf(c.env).REDIS_MAX_RECORD_BYTES,
      ifVersion,
    );
    if ("code" in result) {
      if (result.code === "SALE_NOT_FOUND") throw new ApiError("SALE_NOT_FOUND");
      throw editRefused(result);
    }
    const pushed = await propagate(c.env, result.sale, "edit");
    const { view, etag } = await changedView(c.env, result.sale, pushed);
    return c.json(view, 200, { ETag: etag });
  })
  .post("/sales/:saleId/pause", validate("param", SaleIdParam), async (c) => {
    const { view, etag } = await changeState(c.env, c.req.valid("param").saleId, "paused", keepAliveOf(c));
    return c.json(view, 200, { ETag: etag });
  })
  .post("/sales/:saleId/resume", validate("param", SaleIdParam), async (c) => {
    const { view, etag } = await changeState(c.env, c.req.valid("param").saleId, "active", keepAliveOf(c));
    return c.json(view, 200, { ETag: etag });
  })
  .post("/sales/:saleId/cancel", validate("param", SaleIdParam), async (c) => {
    const { view, etag } = await changeState(c.env, c.req.valid("param").saleId, "cancelled", keepAliveOf(c));
    return c.json(view, 200, { ETag: etag });
  })
  // After Redis lost a sale's live state: rebuild it from D1 (src/settlement/restore.ts).
  .post("/sales/:saleId/restore", validate("param", SaleIdParam), async (c) => {
    const { saleId } = c.req.valid("param");
    const outcome = await orUnavailable(
      "Redis or D1 cannot be reached right now; nothing was restored, send it again",
      { saleId },
      () =>
        restoreSale(c.env.DB, redisFor(c.env), saleId, {
          quietMs: settingsOf(c.env).RESTORE_QUIET_MS,
          keepAlive: keepAliveOf(c),
        }),
    );
    const report = restoreAnswer(saleId, outcome);
    forgetSale(saleId);
    log.info("sale restored from D1", { saleId, remaining: report.remaining, minted: report.minted });
    return c.json(report);
  })
  .get("/sales/:saleId/report", validate("param", SaleIdParam), async (c) => {
    const sale = await recordedSale(c.env.DB, c.req.valid("param").saleId);
    return c.json(await orUnavailable(REDIS_UNREACHABLE, { saleId: sale.id }, () => reconciliationReport(c.env, sale)));
  })
  // The admin console polls this every 2 s: one Redis round trip for the counters and the
  // report's reads (auto-pipelined together), and the report's D1 reads.
  .get("/sales/:saleId/stats", validate("param", SaleIdParam), async (c) => {
    const sale = await recordedSale(c.env.DB, c.req.valid("param").saleId);
    const now = Date.now();
    const [series, report, applied] = await orUnavailable(REDIS_UNREACHABLE, { saleId: sale.id }, () =>
      Promise.all([
        readOutcomeSeries(redisFor(c.env), sale.id, now),
        reconciliationReport(c.env, sale),
        appliedVersion(redisFor(c.env), sale.id),
      ]),
    );
    const view = adminSaleView(sale, reportedRemaining(sale, report), now, syncPendingOf(sale, applied));
    return c.json({ sale: view, series, report } satisfies SaleStats);
  });
