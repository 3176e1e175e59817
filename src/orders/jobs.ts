import * as z from "zod/mini";
import { redisFor } from "../redis/client";
import { log } from "../shared/log";
import { JobMessageSchema } from "../shared/messages";
import { type EndedOrder, expireOrders } from "./lifecycle";

/**
 * The jobs queue's consumer: expiry jobs, each delivered when its orders' window closes.
 * A job that came early (delays are whole seconds) is delivered again when its orders are
 * due; one that fails (D1 or Redis unreachable) is retried with backoff, and the cron sweep
 * covers whatever never arrives. Returns the orders whose units came back.
 */
export async function runJobs(batch: MessageBatch<unknown>, env: Env): Promise<EndedOrder[]> {
  const returned: EndedOrder[] = [];
  for (const message of batch.messages) {
    const parsed = z.safeParse(JobMessageSchema, message.body);
    if (!parsed.success) {
      log.error("jobs: dropping a malformed message", { messageId: message.id });
      message.ack();
      continue;
    }
    try {
      const { expired, notYetDue } = await expireOrders(env.DB, redisFor(env), parsed.data.orderIds);
      returned.push(...expired);
      const next = Math.min(...notYetDue.map((o) => o.expiresAt));
      if (notYetDue.length > 0) message.retry({ delaySeconds: Math.max(1, Math.ceil((next - Date.now()) / 1000)) });
      else message.ack();
    } catch (err) {
      log.warn("jobs: expiry failed; retrying", { messageId: message.id }, err);
      message.retry({ delaySeconds: Math.min(2 ** message.attempts, 60) });
    }
  }
  return returned;
}
