import * as z from "zod/mini";
import { runDraw } from "../admission/draw-run";
import { runQueueDraw } from "../admission/queue-draw-run";
import { redisFor } from "../redis/client";
import { evictSale } from "../sales/catalog";
import { findSale } from "../sales/repository";
import { opensToBuyersAt, type Sale } from "../sales/sale";
import { syncSale } from "../sales/sync-upkeep";
import { log } from "../shared/log";
import { type JobMessage, JobMessageSchema } from "../shared/messages";
import { orderIdCipher } from "../shared/public-order-id";
import { settingsOf } from "../shared/settings";
import { deliverDue } from "./event-deliveries";
import { type EndedOrder, expireOrders } from "./lifecycle";

/** Jobs run by later layers, handed in by the entry (settlement's heal, checkout's offers: orders come before them). */
export interface JobHandlers {
  /** Rebuilds the sale when safe; returns in how many ms to try again, if it must. */
  healSale(saleId: string): Promise<number | undefined>;
  /** Offers a drawn sale's units (src/checkout/draw-offers.ts); `more`: run it again; `nextAt`: again then (the next lane's start, or the sale's). */
  offerDraw(sale: Sale): Promise<{ more: boolean; nextAt?: number }>;
}

/** The longest delay a queue message may carry (12 hours); the cron sends what is due later. */
const MAX_DELAY_SECONDS = 43_200;

/** Sends `job` to run in `ms` (at once for 0), unless that is further than a message may wait. */
async function sendJob(env: Env, job: JobMessage, ms = 0): Promise<void> {
  const delaySeconds = Math.ceil(Math.max(0, ms) / 1000);
  if (delaySeconds <= MAX_DELAY_SECONDS) await env.JOBS.send(job, { delaySeconds, contentType: "json" });
}
/** A retry due sooner than the cron's next run is waited for by the sending job itself. */
const CRON_PERIOD_MS = 60_000;

/**
 * The jobs queue's consumer. Expiry jobs, each delivered when its orders' window closes: a
 * job that came early (delays are whole seconds) is delivered again when its orders are
 * due; the cron sweep covers whatever never arrives. Second evictions of a changed sale's
 * cached copies. Pushes of an operator's change Redis could not take, until it does. Heals of a
 * sale Redis lost, until it is rebuilt. Order events to the shop's endpoints. A draw's steps and
 * offers; a random sale's pre-queue published. A job that fails (D1 or Redis unreachable) is
 * retried with backoff.
 * Returns the orders whose units came back.
 */
export async function runJobs(batch: MessageBatch<unknown>, env: Env, handlers: JobHandlers): Promise<EndedOrder[]> {
  const returned: EndedOrder[] = [];
  for (const message of batch.messages) {
    const parsed = z.safeParse(JobMessageSchema, message.body);
    if (!parsed.success) {
      log.error("jobs: dropping a malformed message", { messageId: message.id });
      message.ack();
      continue;
    }
    try {
      const later = await run(parsed.data, env, handlers, returned);
      if (later === undefined) message.ack();
      else message.retry({ delaySeconds: later });
    } catch (err) {
      log.warn("jobs: a job failed; retrying", { messageId: message.id, kind: parsed.data.kind }, err);
      message.retry({ delaySeconds: Math.min(2 ** message.attempts, 60) });
    }
  }
  return returned;
}

/** Runs one job; returns in how many seconds it must run again, if it must. */
async function run(job: JobMessage, env: Env, handlers: JobHandlers, returned: EndedOrder[]): Promise<number | undefined> {
  switch (job.kind) {
    case "expire-orders": {
      const { expired, notYetDue } = await expireOrders(env.DB, redisFor(env), job.orderIds);
      returned.push(...expired);
      if (notYetDue.length === 0) return undefined;
      const next = Math.min(...notYetDue.map((o) => o.expiresAt));
      return Math.max(1, Math.ceil((next - Date.now()) / 1000));
    }
    case "evict-sale": {
      // The sale may have been archived since this second eviction was sent: then it writes
      // no floor back among the keys the clean-up removed.
      const archived = job.archived || ((await findSale(env.DB, job.saleId))?.archivedAt ?? null) !== null;
      await evictSale(redisFor(env), job.saleId, { archived });
      return undefined;
    }
    case "sync-sale":
      await syncSale(env.DB, redisFor(env), env.JOBS, job.saleId);
      return undefined;
    case "heal-sale": {
      const laterMs = await handlers.healSale(job.saleId);
      return laterMs === undefined ? undefined : Math.max(1, Math.ceil(laterMs / 1000));
    }
    case "deliver-order-events": {
      const key = settingsOf(env).ORDER_ID_KEY;
      // Bodies carry public order ids: without the key the events wait (retried), never sent with internal ids.
      if (!key) throw new Error("ORDER_ID_KEY is not set: order events wait until it is");
      const { nextDueAt } = await deliverDue(env.DB, {
        ids: orderIdCipher(key),
        secretsKey: settingsOf(env).ORDER_EVENT_SECRETS_KEY,
      });
      if (nextDueAt === null || nextDueAt - Date.now() > CRON_PERIOD_MS) return undefined;
      return Math.max(1, Math.ceil((nextDueAt - Date.now()) / 1000));
    }
    // A draw's steps and offers, and a pre-queue's publication, go on in a message of their own
    // each time (a retry would count toward the queue's retries, and a million entries take
    // hundreds of steps).
    case "draw-step": {
      const sale = await findSale(env.DB, job.saleId);
      if (!sale?.draw) return undefined;
      const laterMs = await runDraw({ db: env.DB, redis: redisFor(env), fetch }, sale);
      if (laterMs !== undefined) await sendJob(env, job, laterMs);
      else await sendJob(env, { kind: "draw-offer", saleId: sale.id }, opensToBuyersAt(sale) - Date.now());
      return undefined;
    }
    case "draw-offer": {
      const sale = await findSale(env.DB, job.saleId);
      const offered = sale && (await handlers.offerDraw(sale));
      // More now, or the next lane's (or the public) winners at that draw's start.
      if (offered?.more) await sendJob(env, job);
      else if (offered?.nextAt !== undefined) await sendJob(env, job, offered.nextAt - Date.now());
      return undefined;
    }
    case "queue-draw-step": {
      const sale = await findSale(env.DB, job.saleId);
      if (!sale) return undefined;
      const laterMs = await runQueueDraw({ db: env.DB, redis: redisFor(env) }, sale);
      if (laterMs !== undefined) await sendJob(env, job, laterMs);
      return undefined;
    }
  }
}
