// The Worker's own log lines as npm start keeps them for `npm run trace`: wrangler dev prints
// them among its own output; each line that is one of the Worker's JSON log objects
// (src/shared/log.ts) is appended to a file as it passes, stamped with when it arrived
// (Workers Logs stamps its lines likewise), and everything passes on unchanged.
import { appendFileSync } from "node:fs";
import path from "node:path";
import { Transform } from "node:stream";

/** Where npm start keeps the Worker's log lines in its state directory. */
export const workerLogFile = (stateDir: string) => path.join(stateDir, "worker.log");

// biome-ignore lint/suspicious/noControlCharactersInRegex: wrangler colours its lines.
const COLOURS = /\x1b\[[0-9;]*m/g;

/** A line of the Worker's logs, as kept in the file: when it arrived, then what the Worker wrote. */
export type KeptLogLine = { at: string; level: string; message: string } & Record<string, unknown>;

function keptLine(line: string): KeptLogLine | undefined {
  const plain = line.replace(COLOURS, "").trim();
  const start = plain.indexOf('{"level":');
  if (start < 0) return undefined;
  try {
    const parsed = JSON.parse(plain.slice(start)) as Record<string, unknown>;
    return { at: new Date().toISOString(), ...parsed } as KeptLogLine;
  } catch {
    return undefined;
  }
}

/** Passes wrangler's output on, appending the Worker's JSON log lines to `file`. */
export function keepWorkerLog(file: string): Transform {
  let partial = "";
  const keep = (line: string) => {
    const kept = keptLine(line);
    if (kept) appendFileSync(file, `${JSON.stringify(kept)}\n`);
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const lines = (partial + chunk.toString("utf8")).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) keep(line);
      done(null, chunk);
    },
    flush(done) {
      keep(partial);
      done();
    },
  });
}
