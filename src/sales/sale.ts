export type SaleStatus = "upcoming" | "live" | "sold_out" | "ended";

export interface Sale {
  id: string;
  name: string;
  stock: number;
  startsAt: number; // epoch ms
  endsAt: number;
  idSlot: number;
  admission: { rate: number; burst: number };
}

/** What buyers see: the sale with its live remaining stock. */
export interface SaleView {
  id: string;
  name: string;
  stock: number;
  remaining: number;
  startsAt: string;
  endsAt: string;
  status: SaleStatus;
}

export function saleStatus(now: number, startsAt: number, endsAt: number, remaining: number): SaleStatus {
  if (now >= endsAt) return "ended";
  if (now < startsAt) return "upcoming";
  return remaining > 0 ? "live" : "sold_out";
}

export function saleView(sale: Omit<Sale, "idSlot" | "admission">, remaining: number, now: number): SaleView {
  return {
    id: sale.id,
    name: sale.name,
    stock: sale.stock,
    remaining,
    startsAt: new Date(sale.startsAt).toISOString(),
    endsAt: new Date(sale.endsAt).toISOString(),
    status: saleStatus(now, sale.startsAt, sale.endsAt, remaining),
  };
}

/** The most admission a sale may be given: refill per second and bucket capacity. */
export const MAX_ADMISSION = { rate: 100_000, burst: 1_000_000 } as const;

/** Sale ids are D1 row ids; anything else is refused before touching Redis or D1. */
export const SALE_ID_PATTERN = /^[1-9][0-9]{0,15}$/;
