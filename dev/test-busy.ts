// npm run test:busy -- [vitest arguments]: the whole suite as CI may meet it, on a machine whose
// cores are already busy. Two processes spin on the CPU beside `vitest run` for as long as it
// runs; then it prints the wall time, the slowest files and every process the run left alive
// (found by the run's mark, dev/lib/run-processes.ts), and exits non-zero when a test failed
// or anything was left running.
//
//   --burners 2   how many CPU-spinning processes run beside the suite (default 2)
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { ROOT } from "./lib/project.ts";
import { describeProcesses, markRun, processesOfThisRun, RUN_MARK, stopMarked } from "./lib/run-processes.ts";
import type { FileTime } from "./test-busy-reporter.ts";

const { values } = parseArgs({
  options: { burners: { type: "string", default: "2" } },
  allowPositionals: true,
  strict: false,
});
const burnerCount = Number(values.burners);
/** Everything but --burners goes to vitest (files, --project, --maxWorkers=4, ...). */
const vitestArgs = process.argv.slice(2).filter((arg, i, all) => !arg.startsWith("--burners") && all[i - 1] !== "--burners");

markRun(); // the suite keeps this run's mark (its owner is alive), so what it leaves is found below

/**
 * Spins one core until killed, or until this process is gone (it looks up its parent now and
 * then: a test:busy that was killed leaves no burner behind). Carries no mark, so it is not
 * counted as a leftover.
 */
const BURN = "const parent = process.ppid; for (let i = 1; ; i++) if (i % 1e8 === 0 && process.ppid !== parent) process.exit(0);";

function burner(): ChildProcess {
  const env = { ...process.env };
  delete env[RUN_MARK];
  return spawn(process.execPath, ["-e", BURN], { env, stdio: "ignore" });
}

/** Per test folder (test/node, test/worker, ...): when its first file started and its last ended. */
function folderSpans(files: FileTime[]): string[] {
  const zero = Math.min(...files.map((f) => f.startTime));
  const spans = new Map<string, { from: number; to: number; count: number }>();
  for (const f of files) {
    const folder = path.dirname(path.relative(ROOT, f.name));
    const span = spans.get(folder) ?? { from: Number.POSITIVE_INFINITY, to: 0, count: 0 };
    spans.set(folder, { from: Math.min(span.from, f.startTime), to: Math.max(span.to, f.endTime), count: span.count + 1 });
  }
  return [...spans]
    .sort((a, b) => a[1].from - b[1].from)
    .map(
      ([folder, { from, to, count }]) =>
        `  ${folder.padEnd(14)} ${count} files, ${((from - zero) / 1000).toFixed(0)} s to ${((to - zero) / 1000).toFixed(0)} s`,
    );
}

async function main(): Promise<number> {
  const burners = Array.from({ length: burnerCount }, burner);
  const reportDir = mkdtempSync(path.join(tmpdir(), "test-busy-"));
  const reportFile = path.join(reportDir, "file-times.json");
  const started = performance.now();
  const suite = spawn(
    path.join(ROOT, "node_modules", ".bin", "vitest"),
    ["run", "--reporter=default", `--reporter=${path.join(ROOT, "dev", "test-busy-reporter.ts")}`, ...vitestArgs],
    { cwd: ROOT, stdio: "inherit", env: { ...process.env, FILE_TIMES_OUT: reportFile } },
  );
  const exitCode = await new Promise<number>((resolve) => suite.once("exit", (code) => resolve(code ?? 1)));
  const wallSeconds = (performance.now() - started) / 1000;
  for (const b of burners) b.kill("SIGKILL");

  // Give what the suite stopped a moment to finish exiting, then look for what it did not stop.
  await new Promise((r) => setTimeout(r, 2_000));
  const leftovers = processesOfThisRun();

  let slowest: string[] = [];
  let spans: string[] = [];
  try {
    const results = JSON.parse(readFileSync(reportFile, "utf8")) as FileTime[];
    spans = folderSpans(results);
    slowest = results
      .map((f) => ({ name: path.relative(ROOT, f.name), seconds: (f.endTime - f.startTime) / 1000, status: f.status }))
      .sort((a, b) => b.seconds - a.seconds)
      .slice(0, 10)
      .map((f) => `  ${f.seconds.toFixed(1).padStart(6)} s  ${f.name}${f.status === "passed" ? "" : ` (${f.status})`}`);
  } catch {
    // no report: the suite failed before writing it; the exit code says so
  }
  rmSync(reportDir, { recursive: true, force: true });

  console.log(`
test:busy: ${burnerCount} CPU-burning processes beside the suite
  wall time     ${wallSeconds.toFixed(0)} s
  vitest exit   ${exitCode}
  left running  ${leftovers.length === 0 ? "nothing" : describeProcesses(leftovers)}
when each folder's files ran (seconds from the first file's start):
${spans.join("\n")}
slowest files:
${slowest.join("\n")}`);
  if (leftovers.length > 0) await stopMarked(leftovers);
  return exitCode !== 0 || leftovers.length > 0 ? 1 : 0;
}

process.exitCode = await main();
