// One load run: create the sale (or lab sale), send the crowd per strategy, wait for the
// settlement queue to drain, then check the invariants against what was answered.
import { waitForDrain } from "../../dev/stack/local-stack.ts";
import type { ReconciliationReport } from "../../src/shared/api-types.ts";
import type { StrategyName as LabStrategy } from "../../src/shared/lab-strategies.ts";
import type { LabCopyReport } from "../../src/shared/lab-types.ts";
import { drive, type Pace, type Progress, planCrowd, type Shot } from "./crowd.ts";
import { labViolations, saleViolations } from "./invariants.ts";
import { type RunStats, summarize } from "./stats.ts";
import type { Target } from "./target.ts";

/** `checkout` is the real route; the others are the lab's strategies (LAB_ENABLED=true). */
export type RunStrategy = "checkout" | LabStrategy;

export interface LoadOptions {
  strategies: RunStrategy[];
  users: number;
  /** Requests per user, sent back to back (a double click at 2). */
  attempts: number;
  stock: number;
  pace: Pace;
  drainTimeoutMs: number;
  /** Makes a progress callback for each crowd. */
  progress?: (label: string, total: number) => (p: Progress) => void;
}

export interface RunResult {
  strategy: RunStrategy;
  saleId: string;
  stock: number;
  stats: RunStats;
  /** The reconciliation report after the drain (checkout) or the lab copy's report. */
  report: ReconciliationReport | LabCopyReport;
  violations: string[];
}

export async function runLoad(target: Target, options: LoadOptions): Promise<RunResult[]> {
  // Fresh user ids per run, so runs against the same deployment never meet each other's buyers.
  const shots = await planCrowd(target.api, options.users, options.attempts, `load-${Date.now().toString(36)}-`);
  const results: RunResult[] = [];
  if (options.strategies.includes("checkout")) results.push(await runCheckout(target, options, shots));
  const lab = options.strategies.filter((s): s is LabStrategy => s !== "checkout");
  if (lab.length > 0) {
    const labSaleId = await target.api.createLabSale(options.stock);
    for (const strategy of lab) {
      const { samples, durationMs } = await drive(
        shots,
        (shot) => target.api.labCheckout(strategy, labSaleId, shot.token),
        options.pace,
        options.progress?.(strategy, shots.length),
      );
      const copy = (await target.api.labReport(labSaleId)).strategies[strategy];
      results.push({
        strategy,
        saleId: labSaleId,
        stock: options.stock,
        stats: summarize(samples, durationMs, options.stock),
        report: copy,
        violations: labViolations({ samples, copy }),
      });
    }
  }
  return results;
}

async function runCheckout(target: Target, options: LoadOptions, shots: Shot[]): Promise<RunResult> {
  const { id: saleId } = await target.api.createSale({ stock: options.stock, name: `load run ${new Date().toISOString()}` });
  const { samples, durationMs } = await drive(
    shots,
    (shot) => target.api.checkout(saleId, shot.token),
    options.pace,
    options.progress?.("checkout", shots.length),
  );
  const accepted = samples.filter((s) => s.status === 202).length;
  const drainViolations: string[] = [];
  let report: ReconciliationReport;
  try {
    report = await waitForDrain(target.api, saleId, accepted, options.drainTimeoutMs);
  } catch {
    drainViolations.push(`the settlement queue did not drain within ${options.drainTimeoutMs / 1000} s`);
    report = await target.api.report(saleId);
  }
  const settled = await target.settledOrders?.(saleId);
  return {
    strategy: "checkout",
    saleId,
    stock: options.stock,
    stats: summarize(samples, durationMs, options.stock),
    report,
    violations: [...drainViolations, ...saleViolations({ stock: options.stock, samples, report, settled })],
  };
}

/** Oversold and duplicate figures of a result, whichever kind of report it carries. */
export function soldWrong(result: RunResult): { oversold: number; duplicates: number } {
  const { report, stats } = result;
  if ("d1" in report) return { oversold: report.oversold, duplicates: stats.accepted - stats.acceptedUsers };
  return { oversold: report.oversold, duplicates: report.duplicates };
}

/** A run without its histogram and timeline: what summaries and --json print. */
export function runSummary(result: RunResult) {
  const { stats } = result;
  return {
    strategy: result.strategy,
    saleId: result.saleId,
    stock: result.stock,
    requests: stats.requests,
    accepted: stats.accepted,
    outcomes: stats.outcomes,
    sellOutMs: stats.sellOutMs,
    turnedAwayInStock: stats.turnedAwayInStock,
    acceptedPerSec: stats.acceptedPerSec,
    reqPerSec: stats.reqPerSec,
    latencyMs: stats.latencyMs,
    ...soldWrong(result),
    violations: result.violations,
  };
}
