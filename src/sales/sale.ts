import type { AdminSaleView, QueueView, SaleStatus, SaleView, VariantView } from "../shared/api-types";
import type { BucketKey } from "../shared/keys";
import { DEFAULT_VARIANT } from "../shared/limits";
import type { Admission } from "../shared/refusal";
import type { DrawSettings, LaneInput, QueueMode } from "../shared/requests";

/** A sale's waiting room as D1 records it (src/admission/ runs it). */
export interface WaitingRoomSettings {
  mode: QueueMode;
  prequeueSec: number;
  admitPerSec: number;
  passTtlSec: number;
  /** 32 random bytes (hex) that order a random sale's pre-queue; secret until the sale ends. Null for sales made before the waiting room. */
  seed: string | null;
  /** SHA-256 of the seed (hex), public from the start. */
  seedCommitment: string | null;
}

/** A sale sold by draw, as D1 records it (docs/draws.md). */
export interface SaleDraw {
  /** Entries are taken from opensAt until closesAt (epoch ms), which is at most the sale's start. */
  opensAt: number;
  closesAt: number;
  /** A public beacon's future round mixed into the shuffle; null: the seed alone. */
  beacon: { url: string; round: number } | null;
}

/** A draw as create and edit send it (ISO times) as the sale records it. */
export const saleDrawOf = (draw: DrawSettings | null): SaleDraw | null =>
  draw && { opensAt: Date.parse(draw.opensAt), closesAt: Date.parse(draw.closesAt), beacon: draw.beacon ?? null };

/** A presale lane as D1 records it: buyers with its codes (or an earlier lane's) buy from its start. */
export interface SaleLane {
  name: string;
  /** Epoch ms; before the sale's own start. */
  startsAt: number;
  /** Units the lane may sell, what earlier lanes left unsold on top; null: no cap of its own. */
  stock: number | null;
  /** Per variant, likewise; null: none. */
  variants: Record<string, number> | null;
}

/** When the sale first sells to anyone: its first lane's start, or its own. */
export const opensToBuyersAt = (sale: Pick<Sale, "startsAt" | "lanes">): number => sale.lanes[0]?.startsAt ?? sale.startsAt;

/** Lanes as create and edit send them (ISO times) as the sale records them. */
export const saleLanesOf = (lanes: readonly LaneInput[]): SaleLane[] =>
  lanes.map((l) => ({ name: l.name, startsAt: Date.parse(l.startsAt), stock: l.stock ?? null, variants: l.variants ?? null }));

/** A sale's variant as D1 records it (sale_variants). */
export interface SaleVariant {
  id: string;
  label: string;
  stock: number;
  /** Minor units per unit; null: the sale's price. */
  price: number | null;
}

/** A sale as D1 records it. */
export interface Sale {
  id: string;
  name: string;
  stock: number;
  startsAt: number; // epoch ms
  endsAt: number;
  idSlot: number;
  admission: Admission;
  /** Minor units per unit. */
  price: number;
  currency: string;
  /** Seconds a settled order waits for its payment; 0: orders are final when settled. */
  paymentWindowSec: number;
  perUserLimit: number;
  /** Checkout (and the queue join) ask for a Turnstile token (src/admission/human-check.ts). */
  humanCheck: boolean;
  description: string;
  imageUrl: string | null;
  state: SaleState;
  /** Grows with every edit and change of state. */
  version: number;
  /** When the sale's Redis keys were archived to D1 and removed (after it ended and settled). */
  archivedAt: number | null;
  /** How many buckets its per-buyer Redis records are split into (src/shared/keys.ts, bucketsFor). */
  buckets: number;
  /** The key that picks a buyer's bucket (src/shared/keys.ts, BucketSplit); null for sales stored before sales had one. */
  bucketKey: BucketKey | null;
  queue: WaitingRoomSettings;
  /** Nobody more is let in from the waiting room until an operator resumes admission (places are kept). */
  admissionPaused: boolean;
  /** When a sale already selling was put behind the waiting room (epoch ms): its line opened then; null: the usual opening. */
  queueOpenedAt: number | null;
  /** What the operator tells everyone on the sale's pages (at most NOTICE_MAX_CHARS); null: nothing. */
  notice: string | null;
  /** Sold by draw (its seed is the waiting room's: queue.seed and queue.seedCommitment); null: not. */
  draw: SaleDraw | null;
  /** Presale lanes before the public start, in start order (docs/lanes.md); empty: none. */
  lanes: SaleLane[];
  /** In the admin's order; empty for a sale created without variants (see saleVariants). */
  variants: SaleVariant[];
}

/** The variants a buyer chooses from: the recorded ones, or the one implicit variant of a sale without. */
export function saleVariants(sale: Pick<Sale, "name" | "stock" | "variants">): SaleVariant[] {
  return sale.variants.length > 0 ? sale.variants : [{ id: DEFAULT_VARIANT, label: sale.name, stock: sale.stock, price: null }];
}

/**
 * A sale's live remaining stock, in total and per variant (Redis' meta hash: `remaining`, and
 * `v:<variant id>` for a sale with variants). A sale without variants has only the total.
 */
export interface Remaining {
  total: number;
  byVariant: Record<string, number>;
  /** Units each presale lane sold (meta `ls:<lane>`); absent or empty for a sale without lanes or before any sold. */
  soldByLane?: Record<string, number>;
}

/** What is left of `variant`: its own counter, or the total for the implicit variant. */
export const remainingOf = (sale: Pick<Sale, "variants">, remaining: Remaining, variant: string): number =>
  sale.variants.length > 0 ? (remaining.byVariant[variant] ?? 0) : remaining.total;

/** Known only in total (a sale whose keys are archived away): a variant then reads as none left. */
export const totalOnly = (total: number): Remaining => ({ total, byVariant: {} });

/** Nothing sold yet: every variant's whole stock. */
export const untouched = (sale: Pick<Sale, "stock" | "variants">): Remaining => ({
  total: sale.stock,
  byVariant: Object.fromEntries(sale.variants.map((v) => [v.id, v.stock])),
});

/** The meta hash's field of a variant's remaining units (lua/checkout.lua, lua/sale-sync.lua). */
export const VARIANT_FIELD_PREFIX = "v:";
/** The meta hash's field of the units a lane sold, `ls:<lane>` (per variant: `ls:<lane>:<variant>`). */
const LANE_SOLD_PREFIX = "ls:";

/** Remaining stock from the sale's meta hash fields, as HGETALL gives them; undefined when Redis does not hold the sale. */
export function remainingFromMeta(fields: Record<string, unknown> | null | undefined): Remaining | undefined {
  if (!fields || fields.remaining === undefined || fields.remaining === null) return undefined;
  const byVariant: Record<string, number> = {};
  const soldByLane: Record<string, number> = {};
  for (const [field, value] of Object.entries(fields)) {
    if (field.startsWith(VARIANT_FIELD_PREFIX)) byVariant[field.slice(VARIANT_FIELD_PREFIX.length)] = Number(value);
    else if (field.startsWith(LANE_SOLD_PREFIX) && !field.includes(":", LANE_SOLD_PREFIX.length))
      soldByLane[field.slice(LANE_SOLD_PREFIX.length)] = Number(value);
  }
  return { total: Number(fields.remaining), byVariant, soldByLane };
}

/**
 * What lane `k` may sell, as lua/checkout.lua counts it: its allotment and those of the capped
 * lanes right before it, less what they sold, and never more than the sale has left; the sale's
 * remaining for a lane without an allotment.
 */
export function laneRemaining(lanes: readonly SaleLane[], k: number, live: Remaining): number {
  let allotted = 0;
  let sold = 0;
  for (let j = k; j >= 0; j--) {
    const lane = lanes[j] as SaleLane;
    if (lane.stock === null) break;
    allotted += lane.stock;
    sold += live.soldByLane?.[lane.name] ?? 0;
  }
  return (lanes[k] as SaleLane).stock === null ? live.total : Math.min(live.total, Math.max(0, allotted - sold));
}

/** When joining the sale's public line opens (epoch ms): prequeueSec before the start, or when a live sale was put behind it. */
export const waitingRoomOpensAt = (sale: Pick<Sale, "startsAt" | "queue" | "queueOpenedAt">): number =>
  sale.queueOpenedAt ?? sale.startsAt - sale.queue.prequeueSec * 1000;

/** Ended or cancelled: from then on a random sale's seed is public, and its pre-queue published. */
export const saleIsOver = (sale: Pick<Sale, "endsAt" | "state">, now: number): boolean =>
  now >= sale.endsAt || sale.state === "cancelled";

/**
 * When joining any line of the sale's waiting room opens: its first lane's (docs/lanes.md), or
 * the public line's. From then its settings, lanes and bucket count stay as joiners found them.
 */
export const firstLineOpensAt = (sale: Pick<Sale, "startsAt" | "queue" | "lanes">): number =>
  opensToBuyersAt(sale) - sale.queue.prequeueSec * 1000;

/**
 * One line of a queued sale's waiting room and its window (epoch ms): joining opens at
 * `opensAt`, places are admitted from `startsAt`, and it closes at `endsAt`. `lane` is the
 * presale lane whose own line it is, or "" for the public line.
 */
export interface WaitingLine {
  lane: string;
  opensAt: number;
  startsAt: number;
  endsAt: number;
}

/**
 * A queued sale's lines, as lua/waiting-room-join.lua and lua/waiting-room-progress.lua keep
 * them: each lane's own in start order, opening the pre-queue's length before the lane's start
 * and closing at the next lane's start or the public start; then the public line.
 */
export function waitingLines(sale: Pick<Sale, "startsAt" | "endsAt" | "queue" | "queueOpenedAt" | "lanes">): WaitingLine[] {
  const lead = sale.queue.prequeueSec * 1000;
  const lanes = sale.lanes.map((lane, k) => ({
    lane: lane.name,
    opensAt: lane.startsAt - lead,
    startsAt: lane.startsAt,
    endsAt: sale.lanes[k + 1]?.startsAt ?? sale.startsAt,
  }));
  return [...lanes, { lane: "", opensAt: waitingRoomOpensAt(sale), startsAt: sale.startsAt, endsAt: sale.endsAt }];
}

/** The waiting room as the public sees it: the commitment of a random sale, its seed once the sale is over. */
export function queueView(sale: Pick<Sale, "endsAt" | "state" | "queue">, now: number): QueueView {
  const { mode, prequeueSec, admitPerSec, passTtlSec, seed, seedCommitment } = sale.queue;
  const random = mode === "random";
  const over = saleIsOver(sale, now);
  return {
    mode,
    prequeueSec,
    admitPerSec,
    passTtlSec,
    seedCommitment: random ? seedCommitment : null,
    seed: random && over ? seed : null,
  };
}

/** An operator's say over a sale: checkout refuses a paused one until it is resumed, a cancelled one for good. */
export type SaleState = "active" | "paused" | "cancelled";

export function saleStatus(sale: Pick<Sale, "startsAt" | "endsAt" | "state">, remaining: number, now: number): SaleStatus {
  if (sale.state === "cancelled") return "cancelled";
  if (now >= sale.endsAt) return "ended";
  if (sale.state === "paused") return "paused";
  if (now < sale.startsAt) return "upcoming";
  return remaining > 0 ? "live" : "sold_out";
}

function variantViews(sale: Sale, remaining: Remaining): VariantView[] {
  return saleVariants(sale).map((v) => {
    const left = remainingOf(sale, remaining, v.id);
    return { id: v.id, label: v.label, price: v.price ?? sale.price, stock: v.stock, remaining: left, soldOut: left <= 0 };
  });
}

/** What buyers see: the sale with its live remaining stock. */
export function saleView(sale: Sale, live: Remaining, now: number): SaleView {
  const remaining = live.total;
  return {
    id: sale.id,
    name: sale.name,
    stock: sale.stock,
    remaining,
    startsAt: new Date(sale.startsAt).toISOString(),
    endsAt: new Date(sale.endsAt).toISOString(),
    status: saleStatus(sale, remaining, now),
    price: sale.price,
    currency: sale.currency,
    paymentWindowSec: sale.paymentWindowSec,
    perUserLimit: sale.perUserLimit,
    humanCheck: sale.humanCheck,
    description: sale.description,
    imageUrl: sale.imageUrl,
    notice: sale.notice,
    queue: queueView(sale, now),
    draw: sale.draw && {
      opensAt: new Date(sale.draw.opensAt).toISOString(),
      closesAt: new Date(sale.draw.closesAt).toISOString(),
      ...(sale.draw.beacon && { beacon: sale.draw.beacon }),
    },
    variants: variantViews(sale, live),
    lanes: sale.lanes.map((lane, k) => ({
      name: lane.name,
      startsAt: new Date(lane.startsAt).toISOString(),
      stock: lane.stock,
      remaining: laneRemaining(sale.lanes, k, live),
    })),
  };
}

/** What the admin sees: the buyers' view, the sale's admission bucket, its version and whether Redis has applied it. */
export const adminSaleView = (sale: Sale, remaining: Remaining, now: number, syncPending: boolean): AdminSaleView => ({
  ...saleView(sale, remaining, now),
  admission: sale.admission,
  version: sale.version,
  syncPending,
});

/**
 * Whether D1's record of the sale is ahead of the version Redis applied last (`applied`,
 * undefined when Redis does not hold the sale or cannot be read). An archived sale has nothing
 * left in Redis to follow it.
 */
export const syncPendingOf = (sale: Pick<Sale, "version" | "archivedAt">, applied: number | undefined): boolean =>
  sale.archivedAt === null && (applied === undefined || applied < sale.version);
