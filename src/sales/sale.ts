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
}

export function saleStatus(now: number, startsAt: number, endsAt: number, remaining: number): SaleStatus {
  if (now >= endsAt) return "ended";
  if (now < startsAt) return "upcoming";
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
    status: saleStatus(now, sale.startsAt, sale.endsAt, remaining),
    price: sale.price,
    currency: sale.currency,
    paymentWindowSec: sale.paymentWindowSec,
    perUserLimit: sale.perUserLimit,
  };
}

/** What the admin sees: the buyers' view and the sale's admission bucket. */
export const adminSaleView = (sale: Sale, remaining: number, now: number): AdminSaleView => ({
  ...saleView(sale, remaining, now),
  admission: sale.admission,
});
