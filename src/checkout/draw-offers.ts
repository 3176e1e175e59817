// A draw's winners get their orders from the sale's start (docs/draws.md): each selected
// entry is offered its units through lua/checkout.lua's one step, as a checkout the Worker
// makes on the entry's behalf (the claim "draw", an Idempotency-Key of the entry's own, so an
// offer made twice reserves once), and settles like any order: awaiting payment, paid,
// expired or cancelled. A unit that comes back goes to the next waitlisted entry of its
// variant, in shuffle order, whose quantity it covers. In a sale with presale lanes each lane's
// winners are offered from the lane's start, with the code they entered with (spent in that
// step, as a code holder's checkout spends it), and the public draw's from the sale's start;
// what comes back goes down the waitlists of the draws open by then, the lanes' first.
import { findDrawRun, type OfferCandidate, recordOffers, unoffered } from "../admission/draw-records";
import type { KeepAlive } from "../isolate/shared-work";
import { redisFor } from "../redis/client";
import { bucketSplitOf } from "../sales/known-sales";
import { readLiveSale } from "../sales/live-state";
import { laneRemaining, opensToBuyersAt, remainingOf, type Sale } from "../sales/sale";
import { enqueueOrders } from "../settlement/enqueue";
import { QUEUE_MESSAGE_MAX_ORDERS } from "../shared/limits";
import { log } from "../shared/log";
import { reserve } from "./reserve";

/** The Idempotency-Key of an entry's offer: the same entry offered again gets the same order. */
const offerKey = (leafHash: string) => `draw:${leafHash}`;

/** Waitlisted entries read at a time, looking for those the units that came back cover. */
const WAITLIST_PAGE = 500;

/**
 * The draws open at `now` (tierOf's tiers): every lane's that has started and, from the sale's
 * own start, the public one. The last one's index.
 */
const openTier = (sale: Sale, now: number): number =>
  now >= sale.startsAt ? sale.lanes.length : sale.lanes.findLastIndex((lane) => lane.startsAt <= now);

/**
 * The entries to offer now, of the draws open: the selected ones not offered yet, then, for the
 * units back on sale, waitlisted ones in draw and shuffle order whose quantity fits what is left
 * of their variant (and, in a lane's window, of the lane's allotment).
 */
async function candidates(env: Env, sale: Sale, tier: number): Promise<OfferCandidate[]> {
  const selected = await unoffered(env.DB, sale.id, "selected", tier, QUEUE_MESSAGE_MAX_ORDERS);
  if (selected.length > 0) return selected;
  const live = await readLiveSale(redisFor(env), sale.id);
  if (!live) return [];
  let laneLeft = tier < sale.lanes.length ? laneRemaining(sale.lanes, tier, live.remainingByVariant) : Number.POSITIVE_INFINITY;
  const left = new Map<string, number>();
  const picked: OfferCandidate[] = [];
  for (const entry of await unoffered(env.DB, sale.id, "waitlisted", tier, WAITLIST_PAGE)) {
    const units = Math.min(left.get(entry.variant) ?? remainingOf(sale, live.remainingByVariant, entry.variant), laneLeft);
    if (entry.quantity > units) continue;
    left.set(entry.variant, units - entry.quantity);
    laneLeft -= entry.quantity;
    picked.push(entry);
    if (picked.length === QUEUE_MESSAGE_MAX_ORDERS) break;
  }
  return picked;
}

/** When the next draw opens to its offers after `now` (a later lane's start, or the sale's own), if one is ahead. */
const nextTierAt = (sale: Sale, now: number): number | undefined =>
  [...sale.lanes.map((lane) => lane.startsAt), sale.startsAt].find((at) => at > now);

/**
 * Offers units to the draw's winners (and, for units that came back, to its waitlist), at
 * most a merged call's worth at a time. Returns whether more may be waiting (the caller runs
 * it again now) and when the next draw's winners are due (a later lane's start, or the sale's:
 * the caller runs it again then). Nothing before the sale (or its first lane) starts, after
 * it ends, or before the draw is done.
 */
export async function offerDraw(env: Env, sale: Sale): Promise<{ more: boolean; nextAt?: number }> {
  const now = Date.now();
  if (!sale.draw || sale.state !== "active" || now < opensToBuyersAt(sale) || now >= sale.endsAt) return { more: false };
  if ((await findDrawRun(env.DB, sale.id))?.phase !== "drawn") return { more: false };
  const nextAt = nextTierAt(sale, now);
  const offers = await candidates(env, sale, openTier(sale, now));
  if (offers.length === 0) return { more: false, nextAt };
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
          accessCode: entry.codeHash ?? undefined,
          drawOffer: true,
        },
        { keepAlive, buckets: bucketSplitOf(sale), onReserved: (orders) => keepAlive(enqueueOrders(env.ORDERS, orders)) },
      ),
    ),
  );
  // A send that failed leaves its orders in the outbox, which the re-drive sends.
  await Promise.allSettled(pending);
  // An offer made records its order; one whose code was refused (revoked, expired since the
  // entry) records none ("") and is passed over from then on: its units go down the waitlist.
  const settled = answers.flatMap((answer, i) => {
    const { leafHash } = offers[i] as OfferCandidate;
    if (answer.code === "OK") return [{ leafHash, orderId: answer.orderId }];
    return answer.code === "ACCESS_CODE_INVALID" || answer.code === "ACCESS_CODE_USED" ? [{ leafHash, orderId: "" }] : [];
  });
  if (settled.length > 0) await recordOffers(env.DB, sale.id, settled);
  const refused = answers.filter((a) => a.code !== "OK").map((a) => a.code);
  if (refused.length > 0) log.info("draw: offers refused", { saleId: sale.id, refused: [...new Set(refused)].join(",") });
  // A full batch may have more behind it; a refused one (units gone meanwhile) waits for the next return.
  return { more: settled.length === QUEUE_MESSAGE_MAX_ORDERS, nextAt };
}
