import { app } from "./app";
import { settleBatch } from "./settlement/consumer";
import { handleDeadLetters } from "./settlement/dead-letters";
import { redriveOutbox } from "./settlement/redrive";

const DEAD_LETTER_QUEUE_SUFFIX = "-dlq";

export default {
  fetch: app.fetch,

  async queue(batch, env) {
    if (batch.queue.endsWith(DEAD_LETTER_QUEUE_SUFFIX)) await handleDeadLetters(batch, env);
    else await settleBatch(batch, env);
  },

  async scheduled(_controller, env, ctx) {
    ctx.waitUntil(
      redriveOutbox(env).then((resent) => {
        if (resent > 0) console.log(`outbox re-drive: re-sent ${resent} orders`);
      }),
    );
  },
} satisfies ExportedHandler<Env>;
