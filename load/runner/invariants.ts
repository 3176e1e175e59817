// What must hold after a load run. Each check returns the violations it found, in words;
// an empty list is a clean run.
import type { ReconciliationReport } from "../../src/shared/api-types.ts";
import type { LabCopyReport } from "../../src/shared/lab-types.ts";
import type { Sample } from "./crowd.ts";

/** Answers that mean the request failed rather than being refused by the rules of the sale. */
const isFailure = (s: Sample) => s.status === 0 || (s.status >= 500 && s.code !== "BUSY");

function failures(samples: Sample[]): string[] {
  const failed = samples.filter(isFailure);
  if (failed.length === 0) return [];
  return [`${failed.length} requests failed (${[...new Set(failed.map((s) => s.code))].join(", ")})`];
}

/** The real checkout: the responses, the reconciliation report after the drain and, when readable, D1's rows. */
export function saleViolations(input: {
  stock: number;
  samples: Sample[];
  report: ReconciliationReport;
  settled?: { orderId: string; userId: string }[];
}): string[] {
  const { stock, samples, report, settled } = input;
  const violations = failures(samples);
  const accepted = samples.filter((s) => s.status === 202);
  const perUser = new Map<string, number>();
  for (const s of accepted) perUser.set(s.userId, (perUser.get(s.userId) ?? 0) + 1);
  const twice = [...perUser.values()].filter((n) => n > 1).length;
  if (twice > 0) violations.push(`${twice} users were accepted more than once`);
  if (accepted.length > stock) violations.push(`${accepted.length} checkouts accepted for ${stock} units`);
  if (new Set(accepted.map((s) => s.orderId)).size !== accepted.length) violations.push("an order id was handed out twice");
  if (report.oversold > 0) violations.push(`the report shows ${report.oversold} units oversold`);
  if (!report.reconciled) violations.push("Redis and D1 do not reconcile");
  if (report.d1.confirmed !== accepted.length) {
    violations.push(`D1 confirmed ${report.d1.confirmed} orders for ${accepted.length} accepted checkouts`);
  }
  if (report.redis.buyers !== accepted.length) {
    violations.push(`Redis holds ${report.redis.buyers} buyers for ${accepted.length} accepted checkouts`);
  }
  const users = new Set(samples.map((s) => s.userId)).size;
  const turnedAway = samples.some((s) => isFailure(s) || s.status === 429);
  if (!turnedAway && users >= stock && accepted.length < stock) {
    violations.push(`only ${accepted.length} of ${stock} units sold although ${users} users tried`);
  }
  if (settled) {
    const rows = new Map(settled.map((o) => [o.userId, o.orderId]));
    if (rows.size !== settled.length)
      violations.push(`D1 holds ${settled.length - rows.size} extra orders for users who already had one`);
    if (settled.length !== accepted.length)
      violations.push(`D1 holds ${settled.length} orders for ${accepted.length} accepted checkouts`);
    const missing = accepted.filter((s) => rows.get(s.userId) !== s.orderId).length;
    if (missing > 0) violations.push(`${missing} accepted orders are not in D1 as they were promised`);
  }
  return violations;
}

/** A lab strategy: its own exact count against the 202s it returned, and the two ways to sell wrong. */
export function labViolations(input: { samples: Sample[]; copy: LabCopyReport }): string[] {
  const { samples, copy } = input;
  const violations = failures(samples);
  const accepted = samples.filter((s) => s.status === 202).length;
  if (copy.accepted !== accepted) violations.push(`the lab counted ${copy.accepted} acceptances, ${accepted} 202s were returned`);
  if (copy.oversold > 0) violations.push(`${copy.oversold} units oversold (${copy.accepted} accepted for ${copy.stock})`);
  if (copy.duplicates > 0) violations.push(`${copy.duplicates} duplicate orders`);
  return violations;
}
