// The run's report on disk: the whole result as JSON, and a self-contained HTML page
// (inline SVG, no scripts, no CDN) with the latency histogram and throughput over time.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { type RunResult, soldWrong } from "./run.ts";
import type { RunStats } from "./stats.ts";
import { fixed, seconds } from "./table.ts";

export interface LoadReport {
  startedAt: string;
  target: string;
  options: Record<string, unknown>;
  runs: RunResult[];
}

export function writeReports(dir: string, report: LoadReport): { json: string; html: string } {
  mkdirSync(dir, { recursive: true });
  const stem = path.join(dir, `load-${report.startedAt.replace(/[:.]/g, "-")}`);
  const files = { json: `${stem}.json`, html: `${stem}.html` };
  writeFileSync(files.json, `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(files.html, renderHtml(report));
  return files;
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c] as string);

const W = 640;
const H = 200;
const PAD = { left: 48, right: 12, top: 12, bottom: 28 };
const plotW = W - PAD.left - PAD.right;
const plotH = H - PAD.top - PAD.bottom;

function axes(xLabel: string, yMax: string, xTicks: [number, string][]): string {
  const ticks = xTicks
    .map(([x, label]) => `<text x="${x}" y="${H - 8}" text-anchor="middle">${escapeHtml(label)}</text>`)
    .join("");
  return `<line x1="${PAD.left}" y1="${PAD.top + plotH}" x2="${W - PAD.right}" y2="${PAD.top + plotH}" stroke="#888"/>
<line x1="${PAD.left}" y1="${PAD.top}" x2="${PAD.left}" y2="${PAD.top + plotH}" stroke="#888"/>
<text x="${PAD.left - 4}" y="${PAD.top + 10}" text-anchor="end">${escapeHtml(yMax)}</text>
<text x="${PAD.left - 4}" y="${PAD.top + plotH}" text-anchor="end">0</text>${ticks}
<text x="${W - PAD.right}" y="${PAD.top + 10}" text-anchor="end" fill="#555">${escapeHtml(xLabel)}</text>`;
}

function histogramSvg(stats: RunStats): string {
  const buckets = stats.histogram;
  const max = Math.max(1, ...buckets.map((b) => b.count));
  const barW = plotW / buckets.length;
  const bars = buckets
    .map((b, i) => {
      const h = (b.count / max) * plotH;
      const label = `${b.fromMs}-${b.toMs} ms${i === buckets.length - 1 ? " and slower" : ""}: ${b.count}`;
      return `<rect x="${(PAD.left + i * barW).toFixed(1)}" y="${(PAD.top + plotH - h).toFixed(1)}" width="${Math.max(1, barW - 1).toFixed(1)}" height="${h.toFixed(1)}" fill="#4a78c2"><title>${label}</title></rect>`;
    })
    .join("");
  const last = buckets.at(-1)?.toMs ?? 0;
  const ticks: [number, string][] = [0, 0.25, 0.5, 0.75, 1].map((f) => [PAD.left + f * plotW, `${Math.round(f * last)} ms`]);
  return `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="latency histogram">${axes("latency", String(max), ticks)}${bars}</svg>`;
}

function timelineSvg(stats: RunStats): string {
  const perSecond = (n: number) => (n * 1000) / stats.timelineBinMs;
  const max = Math.max(1, ...stats.timeline.map((b) => perSecond(b.requests)));
  const span = stats.timeline.length * stats.timelineBinMs;
  const x = (atMs: number) => PAD.left + ((atMs + stats.timelineBinMs / 2) / span) * plotW;
  const y = (n: number) => PAD.top + plotH - (perSecond(n) / max) * plotH;
  const line = (pick: (b: RunStats["timeline"][number]) => number, color: string) =>
    `<polyline fill="none" stroke="${color}" stroke-width="2" points="${stats.timeline.map((b) => `${x(b.atMs).toFixed(1)},${y(pick(b)).toFixed(1)}`).join(" ")}"/>`;
  const ticks: [number, string][] = [0, 0.25, 0.5, 0.75, 1].map((f) => [PAD.left + f * plotW, `${seconds(f * span)} s`]);
  const legend = `<text x="${PAD.left + 8}" y="${PAD.top + 12}" fill="#4a78c2">responses/s</text><text x="${PAD.left + 100}" y="${PAD.top + 12}" fill="#2e9e5b">accepted/s</text>`;
  return `<svg viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="throughput over time">${axes("time", `${Math.round(max)}/s`, ticks)}${line((b) => b.requests, "#4a78c2")}${line((b) => b.accepted, "#2e9e5b")}${legend}</svg>`;
}

function runSection(run: RunResult): string {
  const { stats } = run;
  const { oversold, duplicates } = soldWrong(run);
  const figures: [string, string][] = [
    ["sale", run.saleId],
    ["stock", String(run.stock)],
    ["requests", String(stats.requests)],
    ["accepted", String(stats.accepted)],
    ["time to sell out", stats.sellOutMs === null ? "did not sell out" : `${seconds(stats.sellOutMs)} s`],
    ["accepted/s", fixed(stats.acceptedPerSec)],
    ["responses/s", fixed(stats.reqPerSec)],
    [
      "latency p50 / p90 / p99 / max",
      [stats.latencyMs.p50, stats.latencyMs.p90, stats.latencyMs.p99, stats.latencyMs.max]
        .map((ms) => `${fixed(ms)} ms`)
        .join(" / "),
    ],
    ["oversold", String(oversold)],
    ["duplicates", String(duplicates)],
    ...Object.entries(stats.outcomes).map(([code, n]): [string, string] => [`outcome ${code}`, String(n)]),
  ];
  const rows = figures.map(([k, v]) => `<tr><th>${escapeHtml(k)}</th><td>${escapeHtml(v)}</td></tr>`).join("");
  const verdict =
    run.violations.length === 0
      ? `<p class="ok">All invariants hold.</p>`
      : `<ul class="bad">${run.violations.map((v) => `<li>${escapeHtml(v)}</li>`).join("")}</ul>`;
  return `<section><h2>${escapeHtml(run.strategy)}</h2>${verdict}<table>${rows}</table>
<h3>Latency histogram</h3>${histogramSvg(stats)}
<h3>Throughput over time (${stats.timelineBinMs} ms bins)</h3>${timelineSvg(stats)}</section>`;
}

function renderHtml(report: LoadReport): string {
  const violations = report.runs.reduce((n, run) => n + run.violations.length, 0);
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Load run ${escapeHtml(report.startedAt)}</title>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 2rem; color: #222; }
table { border-collapse: collapse; margin: 0.5rem 0; }
th, td { text-align: left; padding: 2px 12px 2px 0; }
svg { font-size: 11px; display: block; }
.ok { color: #2e7d32; } .bad { color: #c62828; }
section { border-top: 1px solid #ddd; margin-top: 1.5rem; }
</style></head><body>
<h1>Load run ${escapeHtml(report.startedAt)}</h1>
<p>Target: ${escapeHtml(report.target)}. Options: <code>${escapeHtml(JSON.stringify(report.options))}</code></p>
<p class="${violations === 0 ? "ok" : "bad"}">${violations === 0 ? "No violations." : `${violations} violations.`}</p>
${report.runs.map(runSection).join("\n")}
</body></html>
`;
}
