import { app } from "./app";
import { offerDraw } from "./checkout/draw-offers";
import { runJobs } from "./orders/jobs";
import { ordersChanged } from "./orders/order-changes";
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
      // Settling raises order.reserved (and more), dead letters order.failed.
      case "flash-sale-orders":
        return ordersChanged(env, await settleBatch(batch, env));
      case "flash-sale-orders-dlq":
        return ordersChanged(env, await handleDeadLetters(batch, env));
      case "flash-sale-jobs": {
        const expired = await runJobs(batch, env, {
          healSale: async (saleId) => {
            const outcome = await healSale(env, saleId);
            return outcome.kind === "wait" ? outcome.retryAfterMs : undefined;
          },
          offerDraw: (sale) => offerDraw(env, sale),
        });
        // Only expiries change orders here; the other jobs leave them (and send events themselves).
        if (expired.length > 0) await ordersChanged(env, expired);
        return;
      }
      default:
        throw new Error(`no consumer for queue ${batch.queue}`);
    }
  },

  /** Every minute (src/settlement/scheduled.ts says what runs). */
  scheduled: (_controller, env) => runScheduledJobs(env),
} satisfies ExportedHandler<Env>;
