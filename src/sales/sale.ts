import type { AdminSaleView, SaleStatus, SaleView } from "../shared/api-types";
import type { Admission } from "../shared/refusal";

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
  };
}

/** What the admin sees: the buyers' view, the sale's admission bucket and its version. */
export const adminSaleView = (sale: Sale, remaining: number, now: number): AdminSaleView => ({
  ...saleView(sale, remaining, now),
  admission: sale.admission,
  version: sale.version,
});
