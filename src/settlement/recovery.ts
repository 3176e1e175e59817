// Recovery without an operator: a sale whose Redis state is missing or behind D1 is detected
// (by checkout, settlement or the cron), stops selling, and is rebuilt from D1 by the cron or
// the jobs queue as soon as that is safe. docs/architecture.md, "Failures and how they heal".

import { recordFailures } from "../orders/settlement-writes";
import { type Redis, redisFor } from "../redis/client";
import { readLiveSale } from "../sales/live-state";
import {
  REDIS_ROLLBACK,
  recordBehind,
  recordLive,
  recordRebuilding,
  type SellingSale,
  salesNotLive,
  sellingSales,
} from "../sales/recovery-record";
import { saleKeys } from "../shared/keys";
import { log } from "../shared/log";
import type { JobMessage, OrderMessage } from "../shared/messages";
import { settingsOf } from "../shared/settings";
import { clearOutbox } from "./outbox";
import { restoreSale } from "./restore";

/** What noticed the sale was missing or behind. */
export type Detector = "checkout" | "settlement" | "cron";

/** How soon a heal that must wait, or found another at work, tries again. */
const BUSY_RETRY_MS = 1_000;

/**
 * Has the sale healed. `fence` (Redis holds it, but behind): it stops selling at once, its
 * meta hash dropped (every checkout then answers 503 until a rebuild writes it back;
 * restore.lua writes only while it is absent); a sale found missing needs none, and a late
 * report of it must not drop a meta just rebuilt. D1 records it behind with the highest
 * sequence the detector saw minted, and the jobs queue gets a heal. Throws when Redis or D1
 * cannot be reached: the detector sees it again later.
 */
export async function reportBehind(
  env: Env,
  saleId: string,
  by: Detector,
  { knownSeq = 0, fence }: { knownSeq?: number; fence: boolean },
): Promise<void> {
  if (fence) await redisFor(env).del(saleKeys(saleId).meta);
  await recordBehind(env.DB, saleId, by, knownSeq);
  log.warn("sale missing or behind in Redis: checkouts refused until it is rebuilt", { saleId, by, knownSeq, fence });
  const heal: JobMessage = { kind: "heal-sale", saleId };
  await env.JOBS.send(heal, { contentType: "json" });
}

/**
 * Orders D1's guards refused (stock, a buyer's limit): Redis sold what D1 already records,
 * which only a Redis gone back (or rebuilt before they landed) does. Each ends `failed` with
 * REDIS_ROLLBACK, recorded before the sale is reported behind so the rebuild's snapshot counts
 * it as ended; its units are not given back to this Redis (the rebuild recounts them).
 */
export async function failRolledBack(env: Env, orders: OrderMessage[]): Promise<void> {
  await recordFailures(
    env.DB,
    orders.map((o) => ({ ...o, reason: REDIS_ROLLBACK })),
  );
  const redis = redisFor(env);
  await clearOutbox(redis, env.DB, orders);
  // The Redis that minted these numbered at least as far as its sequence stands (ids carry no
  // sequence): the rebuild waits for D1 to have landed as many, and numbers on above it.
  for (const saleId of new Set(orders.map((o) => o.saleId))) {
    const knownSeq = (await readLiveSale(redis, saleId))?.minted ?? 0;
    await reportBehind(env, saleId, "settlement", { knownSeq, fence: true });
  }
  log.warn("orders failed: Redis had sold what D1 already records", { orders: orders.length, reason: REDIS_ROLLBACK });
}

/** Rebuilt (or found selling), or not safe yet: try again in retryAfterMs. */
export type HealOutcome = { kind: "live" } | { kind: "wait"; retryAfterMs: number };

/**
 * Rebuilds the sale from D1 under the restore's fenced lock once that is safe
 * (src/settlement/restore.ts), and logs each rebuild as one line. Safe to run from several
 * places at once: one rebuilds, the others wait or find it loaded.
 */
export async function healSale(env: Env, saleId: string, keepAlive?: (work: Promise<unknown>) => void): Promise<HealOutcome> {
  await recordRebuilding(env.DB, saleId);
  const outcome = await restoreSale(env.DB, redisFor(env), saleId, { quietMs: settingsOf(env).RESTORE_QUIET_MS, keepAlive });
  switch (outcome.kind) {
    case "restored":
      log.info("sale rebuilt from D1", {
        saleId,
        detectedBy: outcome.detectedBy,
        behindForMs: outcome.detectedAt === null ? null : Date.now() - outcome.detectedAt,
        remaining: outcome.remaining,
        minted: outcome.minted,
        seq: outcome.seq,
        buyers: outcome.buyers,
        returned: outcome.returned,
      });
      return { kind: "live" };
    case "in-flight":
      return { kind: "wait", retryAfterMs: outcome.retryAfterMs };
    case "busy":
    case "interrupted":
      return { kind: "wait", retryAfterMs: BUSY_RETRY_MS };
    case "loaded":
    case "archived":
    case "not-found":
      await recordLive(env.DB, saleId);
      return { kind: "live" };
  }
}

/**
 * Why Redis' figures for a selling sale cannot be right, if they cannot: the sale is missing;
 * D1 records more units held than Redis has taken (Redis would sell them again); or D1 knows
 * more order ids than Redis' sequence has minted. Read D1 first, then Redis: Redis' taken
 * units and sequence only grow between the two reads, so a healthy sale never looks behind
 * (units that come back between the reads are the one exception, hence a second look).
 */
async function behindBy(redis: Redis, sale: SellingSale): Promise<string | undefined> {
  const live = await readLiveSale(redis, sale.saleId);
  if (!live) return "missing";
  if (sale.landed + sale.seqOffset > live.minted) return "sequence";
  if (sale.sold > live.stock - live.remaining) return "units";
  return undefined;
}

/**
 * The cron's part: finds selling sales Redis lost or holds behind D1 (each as "<sale id>:<why>"
 * in `detected`), and heals every sale not live yet.
 */
export async function superviseSales(env: Env): Promise<{ detected: string[]; healed: string[]; waiting: string[] }> {
  const redis = redisFor(env);
  const look = async (sales: SellingSale[]) =>
    (await Promise.all(sales.map(async (sale) => ({ saleId: sale.saleId, why: await behindBy(redis, sale) })))).filter(
      (s) => s.why !== undefined,
    );
  const suspects = new Set((await look(await sellingSales(env.DB))).map((s) => s.saleId));
  const detected: string[] = [];
  if (suspects.size > 0) {
    // A second look, D1 then Redis again: only what is still behind counts.
    for (const { saleId, why } of await look((await sellingSales(env.DB)).filter((s) => suspects.has(s.saleId)))) {
      await reportBehind(env, saleId, "cron", { fence: why !== "missing" });
      detected.push(`${saleId}:${why}`);
    }
  }
  const healed: string[] = [];
  const waiting: string[] = [];
  for (const saleId of await salesNotLive(env.DB)) {
    const outcome = await healSale(env, saleId);
    (outcome.kind === "live" ? healed : waiting).push(saleId);
  }
  return { detected, healed, waiting };
}
