// The Worker's log lines on the local stack, for `npm run trace`. wrangler dev writes every
// line of its log to a debug log file whatever --log-level prints (WRANGLER_LOG_PATH; npm start
// points it into its state directory), each entry stamped with when it was written:
//   --- <ISO time> <level>
//   <the line>
//   ---
// The Worker's own lines are its JSON log objects (src/shared/log.ts), as Workers Logs keeps them.
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

/** Where npm start has wrangler keep its log, the Worker's lines included. */
export const workerLogFile = (stateDir: string) => path.join(stateDir, "wrangler.log");

/** One of the Worker's log lines: when wrangler wrote it, then what the Worker wrote. */
export type WorkerLogLine = { at: string; level: string; message: string } & Record<string, unknown>;

const ENTRY = /^--- (\S+) \w+\n([\s\S]*?)\n---$/gm;

/** The Worker's JSON log lines in wrangler's log file `file`, oldest first ([] when there is none). */
export function readWorkerLog(file: string): WorkerLogLine[] {
  if (!existsSync(file)) return [];
  const lines: WorkerLogLine[] = [];
  for (const [, at, text] of readFileSync(file, "utf8").matchAll(ENTRY)) {
    for (const line of (text as string).split("\n")) {
      const start = line.indexOf('{"level":');
      if (start < 0) continue;
      try {
        lines.push({ at: at as string, ...(JSON.parse(line.slice(start)) as { level: string; message: string }) });
      } catch {
        // Not one of the Worker's lines after all.
      }
    }
  }
  return lines;
}
