// The Worker's HTTP contract as the load runner and the benchmarks use it.
import type { Report } from "../../dev/stack/local-stack.ts";
import type { LabCopyReport, LabSaleReport, StrategyName as LabStrategy } from "../../src/lab/report-shape.ts";
import type { Target } from "./target.ts";

export { STRATEGIES as LAB_STRATEGIES } from "../../src/lab/report-shape.ts";
export type { LabCopyReport, LabStrategy };

/** What one checkout answered: `code` is ACCEPTED, the API's error code, or why there was no answer. */
export interface Answer {
  status: number;
  code: string;
  orderId?: string;
}

async function admin<T>(target: Target, path: string, body?: unknown): Promise<T> {
  const res = await target.fetch(path, {
    method: body === undefined ? "GET" : "POST",
    headers: { Authorization: `Bearer ${target.adminToken}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

/** A real sale, open now, that admits as fast as a sale may (the crowd, not the admission bucket, is under test). */
export async function createSale(target: Target, stock: number, name: string): Promise<string> {
  const sale = await admin<{ id: string }>(target, "/admin/sales", {
    name,
    stock,
    startsAt: new Date(Date.now() - 1000).toISOString(),
    endsAt: new Date(Date.now() + 3_600_000).toISOString(),
    admission: { rate: 100_000, burst: 1_000_000 },
  });
  return sale.id;
}

export const saleReport = (target: Target, saleId: string) => admin<Report>(target, `/admin/sales/${saleId}/report`);

export async function createLabSale(target: Target, stock: number): Promise<string> {
  return (await admin<{ id: string }>(target, "/lab/sales", { stock })).id;
}

export async function labReport(target: Target, labSaleId: string): Promise<Record<LabStrategy, LabCopyReport>> {
  return (await admin<LabSaleReport>(target, `/lab/sales/${labSaleId}/report`)).strategies;
}

export const checkoutPath = (saleId: string) => `/api/sales/${saleId}/checkout`;
export const labCheckoutPath = (strategy: LabStrategy, labSaleId: string) => `/lab/${strategy}/sales/${labSaleId}/checkout`;

export async function checkout(target: Target, path: string, token: string): Promise<Answer> {
  let res: Response;
  try {
    res = await target.fetch(path, { method: "POST", headers: { Authorization: `Bearer ${token}` } });
  } catch {
    return { status: 0, code: "NETWORK_ERROR" };
  }
  const body = (await res.json().catch(() => undefined)) as { orderId?: string; error?: { code?: string } } | undefined;
  if (res.status === 202) return { status: 202, code: "ACCEPTED", orderId: body?.orderId };
  return { status: res.status, code: body?.error?.code ?? `HTTP_${res.status}` };
}
