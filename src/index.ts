import { app } from "./app";
import { memo } from "./checkout/isolate-memo";
import { runJobs } from "./orders/jobs";
import { sweepOrders } from "./orders/lifecycle";
import { redisFor } from "./redis/client";
import { settleBatch } from "./settlement/consumer";
import { handleDeadLetters } from "./settlement/dead-letters";
import { redriveOutbox } from "./settlement/redrive";

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
      case "flash-sale-orders":
        forgetReturned(await settleBatch(batch, env));
        return;
      case "flash-sale-orders-dlq":
        forgetReturned(await handleDeadLetters(batch, env));
        return;
      case "flash-sale-jobs":
        forgetReturned(await runJobs(batch, env));
        return;
      default:
        throw new Error(`no consumer for queue ${batch.queue}`);
    }
  },

  /** Every minute: re-send unsettled orders, expire what is due, give back units not back yet. */
  async scheduled(_controller, env, ctx) {
    ctx.waitUntil(
      redriveOutbox(env).then((resent) => {
        if (resent > 0) console.log(`outbox re-drive: re-sent ${resent} orders`);
      }),
    );
    ctx.waitUntil(
      sweepOrders(env.DB, redisFor(env)).then(({ expired, returned }) => {
        forgetReturned(returned);
        if (expired > 0 || returned.length > 0) console.log(`sweep: expired ${expired}, returned ${returned.length}`);
      }),
    );
  },
} satisfies ExportedHandler<Env>;
