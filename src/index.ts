import { app } from "./app";
import { memo } from "./checkout/isolate-memo";
import { kickOrderEvents } from "./orders/event-deliveries";
import { runJobs } from "./orders/jobs";
import { settleBatch } from "./settlement/consumer";
import { handleDeadLetters } from "./settlement/dead-letters";
import { healSale } from "./settlement/recovery";
import { runScheduledJobs } from "./settlement/scheduled";

/** The lab's durable-object strategies: objects per lab sale (wrangler.toml binds LAB_SALES). */
export { LabSaleObject } from "./lab/sale-object";

export default {
  fetch: app.fetch,

  async queue(batch, env) {
    switch (batch.queue) {
      // Settling raises order.reserved (and more), dead letters order.failed: send them.
      case "flash-sale-orders":
        memo.returnedAll(await settleBatch(batch, env));
        await kickOrderEvents(env);
        return;
      case "flash-sale-orders-dlq":
        memo.returnedAll(await handleDeadLetters(batch, env));
        await kickOrderEvents(env);
        return;
      case "flash-sale-jobs":
        memo.returnedAll(
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

  /** Every minute (src/settlement/scheduled.ts says what runs). */
  scheduled: (_controller, env) => runScheduledJobs(env, memo.returnedAll),
} satisfies ExportedHandler<Env>;
