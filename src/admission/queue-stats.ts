// The waiting room as an operator sees it (GET /admin/sales/:saleId/queue, and the answer of
// each live control): D1's record of it, the line's counts and measured pace from Redis, and
// the log of what operators did. Redis unreachable leaves the counts null: the console keeps
// working during an outage, and what is changed meanwhile shows as pending.
import type { Redis } from "../redis/client";
import { recentActions } from "../sales/live-controls";
import { appliedVersion } from "../sales/live-state";
import { queueView, type Sale, syncPendingOf } from "../sales/sale";
import type { QueueStats, SaleActionView } from "../shared/api-types";
import { type Line, PUBLIC_LINE } from "../shared/keys";
import { log } from "../shared/log";
import type { Progress } from "../shared/waiting-room-progress";
import { measuredAdmitRate } from "./wait-estimate";
import { type LineRules, readFreshProgress } from "./waiting-room";

/** The actions the view lists, newest first. */
const ACTIONS_SHOWN = 20;

/** What a logged action set, as the view shows it (the log keeps it as JSON). */
function actionView(record: Awaited<ReturnType<typeof recentActions>>[number]): SaleActionView {
  const detail = JSON.parse(record.detail) as { message?: string | null; admitPerSec?: number };
  return {
    at: new Date(record.at).toISOString(),
    action: record.action,
    ...(detail.message !== undefined && { message: detail.message }),
    ...(detail.admitPerSec !== undefined && { admitPerSec: detail.admitPerSec }),
    admin: record.admin,
  };
}

const twoPlaces = (n: number) => Math.round(n * 100) / 100;

/**
 * The view of a sale's waiting room (a sale without one has no counts: its notice is shown on
 * its sale page): its public line's counts, or `line`'s. `readRedis` false: Redis was just found
 * unreachable, so it is not asked again (each ask would wait out the timeout); the counts are
 * null then, as they are when the ask fails.
 */
export async function queueStats(
  db: D1Database,
  redis: Redis,
  sale: Sale,
  rules: LineRules,
  { readRedis = true, line = PUBLIC_LINE }: { readRedis?: boolean; line?: Line } = {},
): Promise<QueueStats> {
  const queued = sale.queue.mode !== "off";
  const live = readRedis
    ? Promise.all([
        queued ? readFreshProgress(redis, sale.id, sale.buckets, rules, line) : undefined,
        appliedVersion(redis, sale.id),
      ]).catch((err) => {
        log.warn("waiting room's counts not read: Redis cannot be reached", { saleId: sale.id }, err);
        return undefined;
      })
    : undefined;
  const [actions, read] = await Promise.all([recentActions(db, sale.id, ACTIONS_SHOWN), live]);
  const p: Progress | undefined = read?.[0];
  const rate = p && measuredAdmitRate(p);
  return {
    saleId: sale.id,
    queue: queueView(sale, Date.now()),
    paused: sale.admissionPaused,
    notice: sale.notice,
    syncPending: syncPendingOf(sale, read?.[1]),
    joined: p?.joined ?? null,
    waiting: p ? Math.max(0, p.joined - p.admitted) : null,
    admitted: p?.admitted ?? null,
    passesUsed: p?.used ?? null,
    passesExpired: p?.expired ?? null,
    noShows: p?.noShows ?? null,
    admittedPerSec: rate === undefined ? null : twoPlaces(rate),
    remaining: p?.remaining ?? null,
    actions: actions.map(actionView),
  };
}
