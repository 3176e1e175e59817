import type { AdminSaleView, QueueView, SaleStatus, SaleView } from "../shared/api-types";
import type { Admission } from "../shared/refusal";
import type { QueueMode } from "../shared/requests";

/** A sale's waiting room as D1 records it (src/admission/ runs it). */
export interface Queue {
  mode: QueueMode;
  prequeueSec: number;
  admitPerSec: number;
  passTtlSec: number;
  /** 32 random bytes (hex) that order a random sale's pre-queue; secret until the sale ends. Null for sales made before the waiting room. */
  seed: string | null;
  /** SHA-256 of the seed (hex), public from the start. */
  seedCommitment: string | null;
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
  queue: Queue;
}

/** When joining the sale's waiting room opens (epoch ms). */
export const queueOpensAt = (sale: Pick<Sale, "startsAt" | "queue">): number => sale.startsAt - sale.queue.prequeueSec * 1000;

/** The waiting room as the public sees it: the commitment of a random sale, its seed once the sale is over. */
export function queueView(sale: Pick<Sale, "endsAt" | "state" | "queue">, now: number): QueueView {
  const { mode, prequeueSec, admitPerSec, passTtlSec, seed, seedCommitment } = sale.queue;
  const random = mode === "random";
  const over = now >= sale.endsAt || sale.state === "cancelled";
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

/** What buyers see: the sale with its live remaining stock. */
export function saleView(sale: Sale, remaining: number, now: number): SaleView {
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
    queue: queueView(sale, now),
  };
}

/** What the admin sees: the buyers' view, the sale's admission bucket and its version. */
export const adminSaleView = (sale: Sale, remaining: number, now: number): AdminSaleView => ({
  ...saleView(sale, remaining, now),
  admission: sale.admission,
  version: sale.version,
});
