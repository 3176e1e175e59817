// A draw's winners get their orders from the sale's start (docs/draws.md): each selected
// entry is offered its units through lua/checkout.lua's one step, as a checkout the Worker
// makes on the entry's behalf (the claim "draw", an Idempotency-Key of the entry's own, so an
// offer made twice reserves once), and settles like any order: awaiting payment, paid,
// expired or cancelled. A unit that comes back goes to the next waitlisted entry of its
// variant, in shuffle order, whose quantity it covers.
import { findDrawRun, type OfferCandidate, recordOffers, unoffered } from "../admission/draw-records";
import type { KeepAlive } from "../isolate/shared-work";
import { redisFor } from "../redis/client";
import { bucketSplitOf } from "../sales/known-sales";
import { readLiveSale } from "../sales/live-state";
import { remainingOf, type Sale } from "../sales/sale";
import { enqueueOrders } from "../settlement/enqueue";
import { QUEUE_MESSAGE_MAX_ORDERS } from "../shared/limits";
import { log } from "../shared/log";
import { reserve } from "./reserve";

/** The Idempotency-Key of an entry's offer: the same entry offered again gets the same order. */
const offerKey = (leafHash: string) => `draw:${leafHash}`;

/** Waitlisted entries read at a time, looking for those the units that came back cover. */
const WAITLIST_PAGE = 500;

/**
 * The entries to offer now: the selected ones not offered yet, then, for the units back on
 * sale, waitlisted ones in shuffle order whose quantity fits what is left of their variant.
 */
async function candidates(env: Env, sale: Sale): Promise<OfferCandidate[]> {
  const selected = await unoffered(env.DB, sale.id, "selected", QUEUE_MESSAGE_MAX_ORDERS);
  if (selected.length > 0) return selected;
  const live = await readLiveSale(redisFor(env), sale.id);
  if (!live) return [];
  const left = new Map<string, number>();
  const picked: OfferCandidate[] = [];
  for (const entry of await unoffered(env.DB, sale.id, "waitlisted", WAITLIST_PAGE)) {
    const units = left.get(entry.variant) ?? remainingOf(sale, live.remainingByVariant, entry.variant);
    if (entry.quantity > units) continue;
    left.set(entry.variant, units - entry.quantity);
    picked.push(entry);
    if (picked.length === QUEUE_MESSAGE_MAX_ORDERS) break;
  }
  return picked;
}

/**
 * Offers units to the draw's winners (and, for units that came back, to its waitlist), at
 * most a merged call's worth at a time. Returns whether more may be waiting (the caller runs
 * it again). Nothing before the sale starts, after it ends, or before the draw is done.
 */
export async function offerDraw(env: Env, sale: Sale): Promise<{ more: boolean }> {
  const now = Date.now();
  if (!sale.draw || sale.state !== "active" || now < sale.startsAt || now >= sale.endsAt) return { more: false };
  if ((await findDrawRun(env.DB, sale.id))?.phase !== "drawn") return { more: false };
  const offers = await candidates(env, sale);
  if (offers.length === 0) return { more: false };
  const pending: Promise<unknown>[] = [];
  const keepAlive: KeepAlive = (work) => pending.push(work);
  const answers = await Promise.all(
    offers.map((entry) =>
      reserve(
        redisFor(env),
        sale.id,
        {
          userId: entry.userId,
          quantity: entry.quantity,
          variant: sale.variants.length > 0 ? entry.variant : undefined,
          idempotencyKey: offerKey(entry.leafHash),
          drawOffer: true,
        },
        { keepAlive, buckets: bucketSplitOf(sale), onReserved: (orders) => keepAlive(enqueueOrders(env.ORDERS, orders)) },
      ),
    ),
  );
  // A send that failed leaves its orders in the outbox, which the re-drive sends.
  await Promise.allSettled(pending);
  const made = answers.flatMap((answer, i) =>
    answer.code === "OK" ? [{ leafHash: (offers[i] as OfferCandidate).leafHash, orderId: answer.orderId }] : [],
  );
  if (made.length > 0) await recordOffers(env.DB, sale.id, made);
  const refused = answers.filter((a) => a.code !== "OK").map((a) => a.code);
  if (refused.length > 0) log.info("draw: offers refused", { saleId: sale.id, refused: [...new Set(refused)].join(",") });
  // A full batch may have more behind it; a refused one (units gone meanwhile) waits for the next return.
  return { more: made.length === QUEUE_MESSAGE_MAX_ORDERS };
}
