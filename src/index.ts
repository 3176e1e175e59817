import { app } from "./app";
import { memo } from "./checkout/isolate-memo";
import { settleBatch } from "./settlement/consumer";
import { handleDeadLetters } from "./settlement/dead-letters";
import { redriveOutbox } from "./settlement/redrive";
import { log } from "./shared/log";
import type { OrderMessage } from "./shared/messages";

const DEAD_LETTER_QUEUE_SUFFIX = "-dlq";

/**
 * This isolate remembered released buyers (and maybe sold out): forget both, or it would
 * refuse their new attempts locally. Other isolates forget within the memo's buyer TTL.
 */
const forgetReleased = (released: OrderMessage[]) => {
  for (const order of released) memo.released(order.saleId, order.userId);
};

export default {
  fetch: app.fetch,

  async queue(batch, env) {
    if (batch.queue.endsWith(DEAD_LETTER_QUEUE_SUFFIX)) forgetReleased(await handleDeadLetters(batch, env));
    else forgetReleased(await settleBatch(batch, env));
  },

  async scheduled(_controller, env, ctx) {
    ctx.waitUntil(
      redriveOutbox(env).then((resent) => {
        if (resent > 0) log.info("outbox re-drive re-sent orders", { resent });
      }),
    );
  },
} satisfies ExportedHandler<Env>;
