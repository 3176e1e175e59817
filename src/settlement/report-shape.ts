/**
 * The body of GET /admin/sales/:id/report. Import-free, so Node-side tools and tests can
 * use it too.
 */
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
