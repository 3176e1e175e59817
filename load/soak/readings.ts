// What the soak watches besides answers: the resident memory and open descriptors of the
// stack's processes (from /proc) and the Worker isolate's JS heap (workerd's inspector,
// Runtime.getHeapUsage). Linux only; elsewhere a process reads as absent.
import { readdirSync, readFileSync } from "node:fs";
import { inspectorSession } from "../runner/profile.ts";

export interface ProcessReading {
  rssMb: number;
  fds: number;
}

/** Summed over `pids` (workerd runs several); undefined when none is there any more. */
export function readProcesses(pids: number[]): ProcessReading | undefined {
  let rssKb = 0;
  let fds = 0;
  let found = 0;
  for (const pid of pids) {
    try {
      const status = readFileSync(`/proc/${pid}/status`, "utf8");
      rssKb += Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
      fds += readdirSync(`/proc/${pid}/fd`).length;
      found++;
    } catch {
      // gone
    }
  }
  return found === 0 ? undefined : { rssMb: rssKb / 1024, fds };
}

/**
 * The Worker isolate's JS heap in use after a full collection (MB): what it keeps, not the
 * garbage it has yet to collect. Undefined when the inspector does not answer in time.
 */
export async function readHeapMb(inspectorPort: number, timeoutMs = 10_000): Promise<number | undefined> {
  let close = () => {};
  const timeout = new Promise<undefined>((resolve) => setTimeout(resolve, timeoutMs).unref());
  const reading = (async () => {
    const session = await inspectorSession(inspectorPort);
    close = session.close;
    await session.send("HeapProfiler.collectGarbage");
    const { usedSize } = await session.send<{ usedSize: number }>("Runtime.getHeapUsage");
    return usedSize / 2 ** 20;
  })().catch(() => undefined);
  try {
    return await Promise.race([reading, timeout]);
  } finally {
    close();
  }
}
