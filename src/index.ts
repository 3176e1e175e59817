import { app } from "./app";
import { memo } from "./checkout/isolate-memo";
import { kickOrderEvents, reportEndedSales } from "./orders/event-deliveries";
import { runJobs } from "./orders/jobs";
import { sweepOrders } from "./orders/lifecycle";
import { redisFor } from "./redis/client";
import { keepBloomFilled } from "./sales/bloom-upkeep";
import { archiveSettledSales } from "./settlement/archive";
import { settleBatch } from "./settlement/consumer";
import { handleDeadLetters } from "./settlement/dead-letters";
import { healSale, superviseSales } from "./settlement/recovery";
import { redriveOutbox } from "./settlement/redrive";
import { log } from "./shared/log";

/** The lab's durable-object strategies: objects per lab sale (wrangler.toml binds LAB_SALES). */
export { LabSaleObject } from "./lab/sale-object";

/**
 * Units came back to these buyers' sales: this isolate forgets it saw them at their limit
 * (or the sale sold out) at once; other isolates forget within the memo's second.
 */
const forgetReturned = (orders: { saleId: string; userId: string }[]) => {
  for (const order of orders) memo.returned(order.saleId, order.userId);
};

export default {
  fetch: app.fetch,

  async queue(batch, env) {
    switch (batch.queue) {
      // Settling raises order.reserved (and more), dead letters order.failed: send them.
      case "flash-sale-orders":
        forgetReturned(await settleBatch(batch, env));
        await kickOrderEvents(env);
        return;
      case "flash-sale-orders-dlq":
        forgetReturned(await handleDeadLetters(batch, env));
        await kickOrderEvents(env);
        return;
      case "flash-sale-jobs":
        forgetReturned(
          await runJobs(batch, env, {
            healSale: async (saleId) => {
              const outcome = await healSale(env, saleId);
              return outcome.kind === "wait" ? outcome.retryAfterMs : undefined;
            },
          }),
        );
        return;
      default:
        throw new Error(`no consumer for queue ${batch.queue}`);
    }
  },

  /**
   * Every minute: re-send unsettled orders, expire what is due, give back units not back yet,
   * raise sale.ended for sales whose window closed and send the order events that are due,
   * keep the catalog's Bloom filter filled, archive sales ended and settled long enough ago,
   * removing their Redis keys, and find and heal sales Redis lost or holds behind D1. Each runs
   * to the end whatever the others do; a failure fails the run, so it shows.
   */
  async scheduled(_controller, env) {
    const sweeping = sweepOrders(env.DB, redisFor(env));
    const [redrive, sweep, bloom, archive, recovery, events] = await Promise.allSettled([
      redriveOutbox(env),
      sweeping,
      keepBloomFilled(env.DB, redisFor(env)),
      archiveSettledSales(env),
      superviseSales(env),
      // After the sweep, whose expiries raise events of their own.
      sweeping
        .catch(() => undefined)
        .then(() => reportEndedSales(env.DB))
        .then(() => kickOrderEvents(env)),
    ]);
    if (redrive.status === "fulfilled" && redrive.value > 0)
      log.info("outbox re-drive re-sent orders", { resent: redrive.value });
    if (sweep.status === "fulfilled") {
      forgetReturned(sweep.value.returned);
      const { expired, returned } = sweep.value;
      if (expired > 0 || returned.length > 0)
        log.info("sweep expired orders and returned units", { expired, returned: returned.length });
    }
    if (bloom.status === "fulfilled" && bloom.value.added > 0) log.info("sale ids added to the Bloom filter", { ...bloom.value });
    if (archive.status === "fulfilled") {
      const { archived, inProgress, commands, removed } = archive.value;
      if (archived.length > 0 || inProgress.length > 0)
        log.info("clean-up archived sales and removed their keys", {
          archived: archived.join(","),
          inProgress: inProgress.join(","),
          commands,
          removed,
        });
    }
    if (recovery.status === "fulfilled") {
      const { detected, healed, waiting } = recovery.value;
      if (detected.length > 0 || healed.length > 0 || waiting.length > 0)
        log.info("recovery checked sales", {
          detected: detected.join(","),
          healed: healed.join(","),
          waiting: waiting.join(","),
        });
    }
    const failures = [redrive, sweep, bloom, archive, recovery, events].flatMap((r) =>
      r.status === "rejected" ? [r.reason] : [],
    );
    if (failures.length > 0) throw new AggregateError(failures, "the scheduled run failed in part; the next one retries");
  },
} satisfies ExportedHandler<Env>;
