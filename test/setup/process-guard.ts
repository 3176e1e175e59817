// First in every project's globalSetup: the run marks itself before anything is started, so
// every process the tests start (directly, through a stack, through npm start, or orphaned by a
// test worker that died) carries the mark (dev/lib/run-processes.ts). It stops what an earlier,
// killed run left behind, and when this run's process exits it kills whatever is still running
// and names it: a leak shows in the log instead of holding ports until the next run.
import {
  describeProcesses,
  markRun,
  processesOfDeadRuns,
  processesOfThisRun,
  signal,
  stopMarked,
} from "../../dev/lib/run-processes.ts";

/** One guard per run, however many projects list this file. */
const GUARDED = Symbol.for("flash-sale.process-guard");

export default async function setup() {
  markRun();
  const holder = globalThis as { [GUARDED]?: true };
  if (holder[GUARDED]) return;
  holder[GUARDED] = true;

  const stale = processesOfDeadRuns();
  if (stale.length > 0) {
    console.warn(`Stopping what an earlier, killed run left running: ${describeProcesses(stale)}`);
    await stopMarked(stale);
  }
  process.once("exit", () => {
    const left = processesOfThisRun();
    signal(left, "SIGKILL");
    // The bundler's service process goes with this process anyway: not a leak.
    const leaked = left.filter((p) => !p.command.includes("esbuild --service"));
    if (leaked.length > 0) console.warn(`Still running when the test run ended, killed: ${describeProcesses(leaked)}`);
  });
}
