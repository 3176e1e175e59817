// Counting the funnel's steps where they happen: one Workers Analytics Engine data point per
// step and sale, fire-and-forget. writeDataPoint returns at once and sends nothing on the
// request's path (the runtime ships the points after the invocation), so counting costs no
// Redis command and no round trip, and checkout stays one. The binding comes from the
// Worker's env as the runtime gives it to any module (cloudflare:workers), so the domain code
// that counts needs no env handed down.
import { env, waitUntil } from "cloudflare:workers";
import { FUNNEL_DATASET, type FunnelStep, funnelDataPoint } from "../shared/funnel";
import { log } from "../shared/log";
import { settingsOf } from "../shared/settings";

/** Counts `count` buyers or orders (with `units` units) reaching `step` of `saleId`'s funnel. */
export function countFunnel(step: FunnelStep, saleId: string, count: number, units = 0): void {
  if (count <= 0) return;
  const point = funnelDataPoint(saleId, step, count, units);
  try {
    env.FUNNEL.writeDataPoint(point);
    const standIn = settingsOf(env).ANALYTICS_STAND_IN_URL;
    // The local stack's stand-in, which keeps what the local runtime's binding drops.
    if (standIn !== undefined)
      waitUntil(
        fetch(new URL("write", `${standIn}/`), {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ dataset: FUNNEL_DATASET, ...point }),
        })
          .then((res) => res.body?.cancel())
          .catch((err) => log.warn("funnel: the local stand-in did not take a data point", { step, saleId }, err)),
      );
  } catch (err) {
    // Never the caller's failure: a lost data point is a gap in a chart, not a lost order.
    log.warn("funnel: data point not written", { step, saleId }, err);
  }
}

/** Counts orders reaching `step`: one data point per sale among them, with their units. */
export function countOrdersInFunnel(step: FunnelStep, orders: readonly { saleId: string; quantity: number }[]): void {
  const bySale = new Map<string, { count: number; units: number }>();
  for (const o of orders) {
    const sale = bySale.get(o.saleId) ?? { count: 0, units: 0 };
    sale.count += 1;
    sale.units += o.quantity;
    bySale.set(o.saleId, sale);
  }
  for (const [saleId, { count, units }] of bySale) countFunnel(step, saleId, count, units);
}
