// The bodies the API answers with. Import-free, so the Node-side client, the load runner
// and the tests read the same shapes the Worker writes.

/** Every error the API returns has this one shape. */
export interface ErrorBody {
  error: { code: string; message: string };
}

export type SaleStatus = "upcoming" | "live" | "sold_out" | "ended";

/** GET /api/sales/:saleId: the sale with its live remaining stock. */
export interface SaleView {
  id: string;
  name: string;
  stock: number;
  remaining: number;
  startsAt: string;
  endsAt: string;
  status: SaleStatus;
}

/** POST /admin/sales: the sale as created, with its admission bucket. */
export interface AdminSaleView extends SaleView {
  admission: { rate: number; burst: number };
}

/** POST /api/sales/:saleId/checkout, 202. */
export interface CheckoutAccepted {
  orderId: string;
  status: "pending";
}

export type OrderStatus = "pending" | "confirmed" | "failed";

/** GET /api/orders/:orderId. */
export interface OrderView {
  orderId: string;
  saleId: string;
  userId: string;
  status: OrderStatus;
}

/** GET /admin/sales/:saleId/report: Redis against D1 for one sale. */
export interface ReconciliationReport {
  saleId: string;
  stock: number;
  redis: { loaded: boolean; remaining: number | null; reserved: number; minted: number; buyers: number; outbox: number };
  d1: { confirmed: number; failed: number; soldCounter: number };
  /** Outbox records not yet in D1. */
  pending: number;
  oversold: number;
  reconciled: boolean;
}
