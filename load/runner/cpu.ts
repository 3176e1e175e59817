// CPU time of the local stack's processes, read from /proc, so a figure can say how much
// server CPU each request cost, and whether other work on the machine took the cores while
// it was measured (then the figure is flagged: its ratios are not to be trusted).
//
// Linux only; elsewhere every reading is zero and nothing is pinned.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { cpus } from "node:os";
import type { Stack } from "../../dev/stack/local-stack.ts";

/** Clock ticks per second of /proc's CPU times (USER_HZ; 100 on every Linux this runs on). */
const TICK_MS = 1000 / 100;
const onLinux = existsSync("/proc/stat");
/** The machine's cores (not this process's affinity, which pinning narrows). */
const CORES = cpus().length;

/** User + system CPU of a process and all its threads, dead ones included (ms). */
function processCpuMs(pid: number): number {
  try {
    // Fields after the command name, which may hold spaces: utime and stime are the 12th and 13th.
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return 0;
  }
}

/** Busy CPU of the whole machine, every core, every process (ms): /proc/stat less idle and iowait. */
function machineBusyMs(): number {
  if (!onLinux) return 0;
  const [, ...ticks] = (readFileSync("/proc/stat", "utf8").split("\n")[0] as string).trim().split(/\s+/).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = ticks as number[];
  return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (irq ?? 0) + (softirq ?? 0) + (steal ?? 0)) * TICK_MS;
}

/** Process ids of `name` (its /proc comm) among the descendants of `root`. */
export function descendantsNamed(root: number, name: string): number[] {
  if (!onLinux) return [];
  const parentOf = new Map<number, number>();
  const commOf = new Map<number, string>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      commOf.set(Number(entry), stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")")));
      parentOf.set(Number(entry), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // gone meanwhile
    }
  }
  const isDescendant = (pid: number): boolean => {
    for (let p = parentOf.get(pid); p !== undefined && p > 1; p = parentOf.get(p)) if (p === root) return true;
    return false;
  };
  return [...commOf].filter(([pid, comm]) => comm === name && isDescendant(pid)).map(([pid]) => pid);
}

/** The processes whose CPU a figure reports, by role. */
export type Processes = Record<string, number[]>;

/**
 * The local stack's processes: workerd (the Worker, its Durable Objects, local D1 and
 * Queues), the gateway, redis-server, the quorum lock's nodes, and this process, the load
 * generator.
 */
export function stackProcesses(stack: Stack): Processes & { workerd: number[]; harness: number[] } {
  return {
    workerd: descendantsNamed(process.pid, "workerd"),
    gateway: [stack.gateway.pid],
    redis: [stack.redis.pid],
    // The quorum lock's databases: idle but for the redlock and lock figures.
    quorum: stack.quorum.flatMap((node) => [node.redis.pid, node.gateway.pid]),
    harness: [process.pid],
  };
}

export interface CpuReading {
  wallMs: number;
  /** CPU of each role's processes over the reading (ms). */
  cpuMs: Record<string, number>;
  /** Busy CPU on the machine that none of the roles used (ms): other people's work. */
  othersMs: number;
  /** othersMs as a share of all the cores over the wall time. */
  othersShare: number;
  /** Other work took more than INTERFERENCE_SHARE of the cores: this figure is suspect. */
  interfered: boolean;
}

/** Other work above this share of the machine's cores flags a measurement. */
const INTERFERENCE_SHARE = 0.1;

/** Starts a reading; call the returned function to end it. */
export function startCpuReading(processes: Processes): () => CpuReading {
  const own = () =>
    Object.fromEntries(
      Object.entries(processes).map(([role, pids]) => [role, pids.reduce((n, pid) => n + processCpuMs(pid), 0)]),
    );
  const started = { at: performance.now(), busy: machineBusyMs(), own: own() };
  return () => {
    const wallMs = performance.now() - started.at;
    const now = own();
    const cpuMs = Object.fromEntries(Object.entries(now).map(([role, ms]) => [role, ms - (started.own[role] ?? 0)]));
    const ours = Object.values(cpuMs).reduce((a, b) => a + b, 0);
    const othersMs = Math.max(0, machineBusyMs() - started.busy - ours);
    const othersShare = wallMs > 0 ? othersMs / (wallMs * CORES) : 0;
    return { wallMs, cpuMs, othersMs, othersShare, interfered: othersShare > INTERFERENCE_SHARE };
  };
}

/** Runs `work` and reads the CPU it cost each role. */
export async function measureCpu<T>(processes: Processes, work: () => Promise<T>): Promise<{ result: T; cpu: CpuReading }> {
  const end = startCpuReading(processes);
  const result = await work();
  return { result, cpu: end() };
}

/**
 * Pins the load generator (this process) to one core and workerd (all its threads) to the
 * other with taskset, so they do not take turns on one core. Returns what was done, in
 * words, or why nothing was.
 */
export function pinStack(processes: { workerd: number[]; harness: number[] }): string {
  const placement = [
    { role: "load generator", pids: processes.harness, core: 0 },
    { role: "workerd", pids: processes.workerd, core: 1 },
  ];
  const cores = CORES;
  if (!onLinux || cores < 2) return "not pinned (needs Linux and 2 cores)";
  try {
    for (const { pids, core } of placement) {
      for (const pid of pids) execFileSync("taskset", ["-a", "-p", "-c", String(core % cores), String(pid)], { stdio: "ignore" });
    }
  } catch {
    return "not pinned (taskset is not available)";
  }
  return placement.map((p) => `${p.role} on core ${p.core % cores}`).join(", ");
}
