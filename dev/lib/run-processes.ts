// Every process a run of the tools starts (a test run, a benchmark, a soak), found by one mark
// in its environment: the run sets RUN_MARK before it starts anything, and every process below
// it inherits the variable (redis-server, the gateway, workerd, wrangler, Chromium, npm start and
// what npm start starts), even after its own parent died and it was handed to init. So the run
// can stop all of them at the end, whoever started them and however they were orphaned, and a
// later run can stop what a killed run left behind (its owner is gone).
//
// Read from /proc (Linux), by hand: no package finds processes by an environment variable, and
// process groups do not help here (wrangler, npm start's watchdog and Chromium make their own).
import { readdirSync, readFileSync } from "node:fs";

export const RUN_MARK = "FLASH_SALE_RUN";

export interface MarkedProcess {
  pid: number;
  /** The mark it carries: "<owner pid>.<owner start time>". */
  mark: string;
  command: string;
}

/** /proc/<pid>/stat from its third field on (state, parent, ...), or undefined when the process is gone. */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ")".
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/** When a process started (clock ticks since boot, field 22): a recycled pid has another. */
const startTime = (pid: number): string | undefined => statFields(pid)?.[19];

/**
 * Marks this process as the owner of what it starts from now on, unless a live run above it
 * (e.g. `npm run test:busy`, which reports what is left after the suite) already owns it.
 */
export function markRun(): string {
  const inherited = process.env[RUN_MARK];
  if (inherited && ownerAlive(inherited)) return inherited;
  const mark = `${process.pid}.${startTime(process.pid)}`;
  process.env[RUN_MARK] = mark;
  return mark;
}

/**
 * Whether the process that made `mark` still runs (a pid is recycled; its start time is not).
 * A mark of any other shape is not one this code made: it counts as alive, so nothing is
 * stopped on its account.
 */
function ownerAlive(mark: string): boolean {
  const parts = /^(\d+)\.(\d+)$/.exec(mark);
  return !parts || startTime(Number(parts[1])) === parts[2];
}

function markOf(pid: number): string | undefined {
  try {
    const environ = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
    const entry = environ.find((e) => e.startsWith(`${RUN_MARK}=`));
    if (entry) return entry.slice(RUN_MARK.length + 1);
    // redis-server writes its title over its environment: it shows the mark in its title instead
    // (padded with NULs, hence the mark's exact shape).
    return new RegExp(`${RUN_MARK}=(\\d+\\.\\d+)`).exec(readFileSync(`/proc/${pid}/cmdline`, "utf8"))?.[1];
  } catch {
    return undefined; // gone, or not ours to read
  }
}

/** What a process that overwrites its environment (redis-server) puts in its title to keep the mark. */
export const markInTitle = (): string | undefined => {
  const mark = process.env[RUN_MARK];
  return mark && `${RUN_MARK}=${mark}`;
};

/** Every live process that carries a run's mark, except this one and the processes above it. */
export function markedProcesses(): MarkedProcess[] {
  const exempt = new Set<number>();
  for (let pid = process.pid; pid > 1; ) {
    exempt.add(pid);
    pid = Number(statFields(pid)?.[1] ?? 0);
  }
  const found: MarkedProcess[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry) || exempt.has(Number(entry))) continue;
    const mark = markOf(Number(entry));
    if (mark === undefined) continue;
    let command = "";
    try {
      command = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0").join(" ").trim();
    } catch {
      continue;
    }
    if (command === "") continue; // a zombie: nothing left to stop
    found.push({ pid: Number(entry), mark, command });
  }
  return found;
}

/** What this run (or the run that owns it) still has running. */
export const processesOfThisRun = (): MarkedProcess[] => {
  const mark = process.env[RUN_MARK];
  return mark ? markedProcesses().filter((p) => p.mark === mark) : [];
};

/** What runs whose owner is gone left behind (a killed test run, a crashed benchmark). */
export const processesOfDeadRuns = (): MarkedProcess[] => markedProcesses().filter((p) => !ownerAlive(p.mark));

export function signal(processes: MarkedProcess[], sig: NodeJS.Signals): void {
  for (const p of processes) {
    try {
      process.kill(p.pid, sig);
    } catch {
      // already gone
    }
  }
}

/** SIGTERM, then SIGKILL for whatever still runs after `graceMs`. */
export async function stopMarked(processes: MarkedProcess[], graceMs = 3_000): Promise<void> {
  signal(processes, "SIGTERM");
  const deadline = Date.now() + graceMs;
  const running = () => processes.filter((p) => startTime(p.pid) !== undefined && markOf(p.pid) === p.mark);
  while (running().length > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  signal(running(), "SIGKILL");
}

export const describeProcesses = (processes: MarkedProcess[]): string =>
  processes.map((p) => `${p.pid} ${p.command.slice(0, 100)}`).join("; ");
