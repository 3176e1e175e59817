// npm run build: bundles the Worker offline as `wrangler deploy` would (dist/), then prints
// what it weighs gzipped against the budget and the CPU its start-up takes (wrangler's
// start-up profile, measured on this machine: compare runs here, not with Cloudflare's CPUs).
// Exits 1 when the bundle is over budget. What it is made of: `npm run size`.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { offlineWranglerEnv, ROOT, WRANGLER } from "./lib/project.ts";
import { BUDGET_KIB, bundleWorker, scriptGzippedKiB } from "./lib/worker-bundle.ts";

const DIST = path.join(ROOT, "dist");
const STARTUP_PROFILE = path.join(DIST, "worker-startup.cpuprofile");

bundleWorker(DIST);
const bundle = readFileSync(path.join(DIST, "index.js"));
const gzipped = scriptGzippedKiB(DIST);

execFileSync(WRANGLER, ["check", "startup", "--outfile", STARTUP_PROFILE], {
  cwd: ROOT,
  env: offlineWranglerEnv(),
  stdio: "ignore",
});
const profile = JSON.parse(readFileSync(STARTUP_PROFILE, "utf8")) as {
  nodes: { id: number; callFrame: { functionName: string } }[];
  samples: number[];
  timeDeltas: number[];
};
const idle = new Set(profile.nodes.filter((n) => n.callFrame.functionName === "(idle)").map((n) => n.id));
// Each sample's time is the delta to the next one.
const startupMs = profile.samples.reduce((ms, id, i) => (idle.has(id) ? ms : ms + (profile.timeDeltas[i + 1] ?? 0) / 1000), 0);

console.log(
  `\nbundle: ${(bundle.length / 1024).toFixed(1)} KiB, ${gzipped.toFixed(1)} KiB gzipped (budget ${BUDGET_KIB} KiB)` +
    `\nstart-up CPU: ${startupMs.toFixed(1)} ms on this machine (wrangler check startup; profile in ${path.relative(ROOT, STARTUP_PROFILE)})`,
);
if (gzipped > BUDGET_KIB) {
  console.error(`the bundle is over its ${BUDGET_KIB} KiB budget`);
  process.exitCode = 1;
}
