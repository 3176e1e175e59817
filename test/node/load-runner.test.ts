// The load runner: a tiny run on the local stack writes its JSON and HTML reports and finds
// no violation; the million-joiner rehearsal runs at its smallest; the invariant checks do find them when they are there; the CLI prints one
// JSON line and exits 0 on a clean run, 2 on a usage error.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../../dev/lib/project.ts";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";
import type { Sample } from "../../load/runner/crowd.ts";
import { labViolations, saleViolations } from "../../load/runner/invariants.ts";
import { writeReports } from "../../load/runner/report-files.ts";
import { type RunResult, runLoad } from "../../load/runner/run.ts";
import { stackTarget } from "../../load/runner/target.ts";
import { rehearseMillion } from "../../load/runner/waiting-room-million.ts";
import type { ReconciliationReport } from "../../src/shared/api-types.ts";

const run = promisify(execFile);
let stack: Stack;
let out: string;

beforeAll(async () => {
  stack = await startStack({ vars: { LAB_ENABLED: "true" } });
  out = mkdtempSync(path.join(tmpdir(), "load-reports-"));
});
afterAll(async () => {
  await stack?.stop();
  rmSync(out, { recursive: true, force: true });
});

describe("a tiny load run on the local stack", () => {
  let runs: RunResult[];
  let files: { json: string; html: string };

  beforeAll(async () => {
    runs = await runLoad(stackTarget(stack), {
      strategies: ["checkout", "atomic"],
      users: 200,
      attempts: 2,
      stock: 20,
      pace: { concurrency: 100 },
      drainTimeoutMs: 30_000,
    });
    files = writeReports(out, { startedAt: new Date().toISOString(), target: "test", options: {}, runs });
  });

  it("sells the stock exactly once per unit and finds no violation", () => {
    expect(runs.map((r) => r.strategy)).toEqual(["checkout", "atomic"]);
    for (const r of runs) {
      expect(r.violations).toEqual([]);
      expect(r.stats.requests).toBe(400);
      expect(r.stats.accepted).toBe(20);
      expect(r.stats.sellOutMs).toBeGreaterThan(0);
    }
    const report = runs[0]?.report as ReconciliationReport;
    expect(report).toMatchObject({ oversold: 0, reconciled: true, pending: 0, d1: { confirmed: 20 } });
  });

  it("writes the JSON report and a self-contained HTML page with both charts", () => {
    expect(existsSync(files.json)).toBe(true);
    const json = JSON.parse(readFileSync(files.json, "utf8"));
    expect(json.runs).toHaveLength(2);
    expect(json.runs[0].stats.histogram.length).toBeGreaterThan(0);
    const html = readFileSync(files.html, "utf8");
    expect(html).toContain('aria-label="latency histogram"');
    expect(html).toContain('aria-label="throughput over time"');
    expect(html).not.toMatch(/<script|src=|href=|https?:\/\//);
  });
});

describe("the million-joiner rehearsal, at its smallest", () => {
  it("joins the crowd into Redis at one script call each and the sample through the Worker; the front buys, nothing sold wrong", async () => {
    const figures = await rehearseMillion(stack, {
      joiners: 2_000,
      sampled: 20,
      stock: 200,
      admitPerSec: 100,
      pollForMs: 20_000,
    });
    expect(figures.violations).toEqual([]);
    expect(figures.workerJoins.count).toBe(20);
    expect(figures.redisJoins.count).toBe(1_980);
    // One script call a join; the stack's own background work (settlement, its cron) may add a few.
    expect(figures.redisJoins.upstashCommandsPer).toBeGreaterThanOrEqual(1);
    expect(figures.redisJoins.upstashCommandsPer).toBeLessThan(1.05);
    expect(figures.accepted).toBe(20);
    expect(figures.largestRecord.bytes).toBeGreaterThan(0);
    expect(figures.largestRecord.bytes).toBeLessThan(figures.recordLimitBytes);
  });
});

describe("invariant checks", () => {
  const sample = (userId: string, status: number, code: string, orderId?: string): Sample => ({
    userId,
    status,
    code,
    orderId,
    startMs: 0,
    latencyMs: 1,
  });
  const cleanReport: ReconciliationReport = {
    saleId: "1",
    stock: 1,
    redis: { loaded: true, remaining: 0, reserved: 1, minted: 1, buyers: 1, outbox: 0, returned: 0 },
    d1: {
      confirmed: 1,
      failed: 0,
      soldCounter: 1,
      awaitingPayment: 0,
      paid: 0,
      expired: 0,
      cancelled: 0,
      buyers: 1,
      returnedUnits: 0,
    },
    states: {
      pending: { orders: 0, units: 0 },
      awaiting_payment: { orders: 0, units: 0 },
      paid: { orders: 0, units: 0 },
      expired: { orders: 0, units: 0 },
      cancelled: { orders: 0, units: 0 },
      confirmed: { orders: 1, units: 1 },
      failed: { orders: 0, units: 0 },
    },
    pending: 0,
    returnsPending: 0,
    refundsDue: 0,
    oversold: 0,
    reconciled: true,
    archivedAt: null,
    largestKey: { key: "fs:{sale:1}:buyers", bytes: 200, share: 0.000002 },
    warnings: [],
    health: { state: "live", detectedAt: null, detectedBy: null, rebuiltAt: null, rebuilds: 0, failedByRollback: 0 },
    variants: {},
  };

  it("pass a clean sale", () => {
    const samples = [sample("a", 202, "ACCEPTED", "1"), sample("b", 409, "SOLD_OUT")];
    expect(saleViolations({ stock: 1, samples, report: cleanReport, settled: [{ orderId: "1", userId: "a" }] })).toEqual([]);
  });

  it("catch an oversold, unreconciled sale with a user served twice and an order missing from D1", () => {
    const samples = [sample("a", 202, "ACCEPTED", "1"), sample("a", 202, "ACCEPTED", "2"), sample("b", 503, "UNAVAILABLE")];
    const report = { ...cleanReport, oversold: 1, reconciled: false };
    const violations = saleViolations({ stock: 1, samples, report, settled: [{ orderId: "1", userId: "a" }] });
    expect(violations).toEqual(
      expect.arrayContaining([
        "1 requests failed (UNAVAILABLE)",
        "1 users were accepted more than once",
        "2 checkouts accepted for 1 units",
        "the report shows 1 units oversold",
        "Redis and D1 do not reconcile",
        "1 accepted orders are not in D1 as they were promised",
      ]),
    );
  });

  it("catch a lab strategy that oversold, sold twice or miscounted", () => {
    const samples = [sample("a", 202, "ACCEPTED", "1"), sample("b", 503, "BUSY")];
    const copy = { stock: 1, remaining: 0, accepted: 3, buyers: 2, oversold: 2, duplicates: 1, unsold: 0 };
    expect(labViolations({ samples, copy })).toEqual([
      "the lab counted 3 acceptances, 1 202s were returned",
      "2 units oversold (3 accepted for 1)",
      "1 duplicate orders",
    ]);
  });
});

describe("the CLI", () => {
  const cli = (...args: string[]) =>
    run(process.execPath, ["--import", "tsx", "load/runner/main.ts", ...args], { cwd: ROOT, timeout: 60_000 });

  it("prints the summary as one JSON line and exits 0 on a clean run", async () => {
    const { stdout } = await cli("--users", "100", "--stock", "10", "--concurrency", "50", "--json", "--out", out);
    const lines = stdout.trim().split("\n");
    expect(lines).toHaveLength(1);
    const summary = JSON.parse(lines[0] as string);
    expect(summary.violations).toBe(0);
    expect(summary.runs[0]).toMatchObject({ strategy: "checkout", accepted: 10, oversold: 0, duplicates: 0 });
    expect(existsSync(summary.reports.html)).toBe(true);
  });

  it("exits 2 on a usage error", async () => {
    await expect(cli("--strategy", "bogus")).rejects.toMatchObject({ code: 2 });
  });
});
