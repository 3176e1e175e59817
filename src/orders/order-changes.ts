// The one seam after orders change state (settled, paid, cancelled, expired, failed, a sale
// cancelled): every path that changes orders calls `ordersChanged` once it has, and nothing
// else starts the work that follows. D1's triggers record each change as an order event in
// the statement that makes it (migrations/0008_order_events.sql); what follows here is the
// sending of those events (the jobs queue, never the request), what the isolate keeps of the
// orders that ended (their units came back) hearing of them, and a draw's units that came
// back going down its waitlist.
import { knownSales } from "../sales/known-sales";
import { log } from "../shared/log";
import { kickOrderEvents } from "./event-deliveries";

/** An order that ended and gave its units back: its sale and buyer. */
export interface EndedOrderRef {
  saleId: string;
  userId: string;
}

const listeners: ((ended: readonly EndedOrderRef[]) => void)[] = [];

/**
 * What the isolate keeps of orders hears of those that ended: checkout's memo forgets it saw
 * their buyers at their limit (the entry, src/app.ts, registers it: src/orders/ comes before it).
 */
export function onOrdersEnded(listener: (ended: readonly EndedOrderRef[]) => void): void {
  listeners.push(listener);
}

/**
 * Orders changed state, `ended` of them giving their units back: the isolate is told, and the
 * order events the changes raised are sent (a failure to ask is left to the cron; it never
 * fails the caller).
 */
export async function ordersChanged(env: Pick<Env, "DB" | "JOBS">, ended: readonly EndedOrderRef[] = []): Promise<void> {
  if (ended.length > 0) for (const listener of listeners) listener(ended);
  await Promise.all([kickOrderEvents(env), offerReturnsOfDraws(env, ended)]);
}

/**
 * Units that came back to a sale sold by draw go down its waitlist within seconds: one offer
 * job per such sale. Never throws: the cron offers whatever this could not ask for.
 */
async function offerReturnsOfDraws(env: Pick<Env, "DB" | "JOBS">, ended: readonly EndedOrderRef[]): Promise<void> {
  if (ended.length === 0) return;
  try {
    const sales = await knownSales(
      env.DB,
      ended.map((o) => o.saleId),
    );
    const draws = [...sales.values()].flatMap((sale) => (sale?.draw ? [sale.id] : []));
    if (draws.length > 0)
      await env.JOBS.sendBatch(
        draws.map((saleId) => ({ body: { kind: "draw-offer" as const, saleId }, contentType: "json" as const })),
      );
  } catch (err) {
    log.warn("returned units of draws left to the cron", {}, err);
  }
}
