// What `npm start` has running, recorded in .state/stack.json as it starts each process, so
// a later run (or the watchdog) can stop what a crashed or killed run left behind. A pid is
// trusted only while its command line still contains the marker it was recorded with: pids
// are recycled.
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { commandLine } from "./port-owner.ts";

export interface RecordedProcess {
  name: string;
  pid: number;
  /** It leads a process group of its own (wrangler leaves workerd behind otherwise): stop the group. */
  group: boolean;
  /** Part of its command line, checked before any signal is sent. */
  marker: string;
}

export interface StackRecord {
  /** The `npm start` process itself. */
  owner: RecordedProcess;
  processes: RecordedProcess[];
}

/** A previous `npm start` is still running: stopping its processes would pull the stack from under it. */
export class StackRunningError extends Error {
  constructor(readonly pid: number) {
    super(`npm start is already running (PID ${pid}); stop it first: kill ${pid}`);
  }
}

export function isRunning(p: RecordedProcess): boolean {
  try {
    process.kill(p.pid, 0);
  } catch {
    return false;
  }
  return commandLine(p.pid).includes(p.marker);
}

function signal(p: RecordedProcess, sig: NodeJS.Signals): void {
  try {
    process.kill(p.group ? -p.pid : p.pid, sig);
  } catch {
    // already gone
  }
}

/** SIGTERM, then SIGKILL for whatever still runs after `graceMs`. */
export async function stopProcesses(processes: RecordedProcess[], graceMs = 5_000): Promise<void> {
  const running = processes.filter(isRunning);
  for (const p of running) signal(p, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (running.some(isRunning) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
  for (const p of running.filter(isRunning)) signal(p, "SIGKILL");
}

export class StackRecordFile {
  constructor(readonly file: string) {}

  read(): StackRecord | undefined {
    if (!existsSync(this.file)) return undefined;
    try {
      return JSON.parse(readFileSync(this.file, "utf8")) as StackRecord;
    } catch {
      return undefined; // half-written by a run killed mid-write: nothing to trust in it
    }
  }

  /**
   * Stops the processes a previous run left behind and returns their names. Throws
   * StackRunningError when that run itself is still alive.
   */
  async stopLeftovers(): Promise<string[]> {
    const record = this.read();
    if (!record) return [];
    if (isRunning(record.owner)) throw new StackRunningError(record.owner.pid);
    const leftovers = record.processes.filter(isRunning);
    await stopProcesses(leftovers);
    this.clear();
    return leftovers.map((p) => `${p.name} (PID ${p.pid})`);
  }

  begin(owner: RecordedProcess): void {
    this.write({ owner, processes: [] });
  }

  add(process: RecordedProcess): void {
    const record = this.read();
    if (!record) throw new Error(`${this.file} disappeared while the stack was starting`);
    record.processes.push(process);
    this.write(record);
  }

  clear(): void {
    rmSync(this.file, { force: true });
  }

  private write(record: StackRecord): void {
    // Written whole and renamed would be safer, but the reader already treats a torn file as empty.
    writeFileSync(this.file, `${JSON.stringify(record, null, 2)}\n`);
  }
}
