import { superviseDraws } from "../admission/draw-run";
import { superviseQueueDraws } from "../admission/queue-draw-run";
import { keepEndpointSecrets } from "../orders/endpoint-secrets";
import { reportEndedSales } from "../orders/event-deliveries";
import { sweepOrders } from "../orders/lifecycle";
import { ordersChanged } from "../orders/order-changes";
import { redisFor } from "../redis/client";
import { keepBloomFilled } from "../sales/bloom-upkeep";
import { pushLaggingSales } from "../sales/sync-upkeep";
import { log } from "../shared/log";
import { settingsOf } from "../shared/settings";
import { archiveSettledSales } from "./archive";
import { superviseSales } from "./recovery";
import { redriveOutbox } from "./redrive";

/**
 * The cron's run, every minute: re-send unsettled orders, expire what is due, give back units
 * not back yet, raise sale.ended for sales whose window closed and send the order events that
 * are due, keep the catalog's Bloom filter filled, archive sales ended and settled long enough
 * ago, removing their Redis keys, find and heal sales Redis lost or holds behind D1, push
 * operators' changes Redis has not applied yet (their own push failed), send
 * draws on (closed ones drawn, drawn ones' units offered), publish the pre-queues of random
 * sales that are over, and seal endpoint secrets still in
 * plain text and forget replaced ones whose grace is over. Each
 * runs to the end whatever the others do; a failure fails the run, so it shows.
 */
export async function runScheduledJobs(env: Env): Promise<void> {
  const sweeping = sweepOrders(env.DB, redisFor(env));
  const [redrive, sweep, bloom, archive, recovery, draws, queueDraws, events, secrets, pushed] = await Promise.allSettled([
    redriveOutbox(env),
    sweeping,
    keepBloomFilled(env.DB, redisFor(env)),
    archiveSettledSales(env),
    superviseSales(env),
    superviseDraws(env.DB, env.JOBS),
    superviseQueueDraws(env.DB, env.JOBS),
    // After the sweep, whose expiries raise events of their own, and whose returns the isolate hears of.
    sweeping
      .catch(() => undefined)
      .then(async (swept) => {
        await reportEndedSales(env.DB);
        await ordersChanged(env, swept?.returned);
      }),
    keepEndpointSecrets(env.DB, settingsOf(env).ORDER_EVENT_SECRETS_KEY),
    pushLaggingSales(env.DB, redisFor(env), env.JOBS),
  ]);
  if (redrive.status === "fulfilled" && redrive.value > 0) log.info("outbox re-drive re-sent orders", { resent: redrive.value });
  if (sweep.status === "fulfilled") {
    const { expired, returned: back } = sweep.value;
    if (expired > 0 || back.length > 0) log.info("sweep expired orders and returned units", { expired, returned: back.length });
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
  if (draws.status === "fulfilled" && draws.value.stepped.length > 0)
    log.info("draws sent on", { stepped: draws.value.stepped.join(",") });
  if (queueDraws.status === "fulfilled" && queueDraws.value.length > 0)
    log.info("pre-queues sent on to their publication", { stepped: queueDraws.value.join(",") });
  if (secrets.status === "fulfilled" && secrets.value > 0) log.info("endpoint secrets sealed", { sealed: secrets.value });
  const failures = [redrive, sweep, bloom, archive, recovery, draws, queueDraws, events, secrets, pushed].flatMap((r) =>
    r.status === "rejected" ? [r.reason] : [],
  );
  if (failures.length > 0) throw new AggregateError(failures, "the scheduled run failed in part; the next one retries");
}
