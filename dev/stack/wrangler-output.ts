// wrangler dev's output as npm start passes it on: all of it but the warning that scheduled
// Workers are not triggered during local development. npm start fires the Worker's cron
// itself every minute (dev/start.ts), so the warning is not true of this stack, and it made
// people wonder whether unpaid orders ever expire.
import { Transform } from "node:stream";

const CRON_WARNING = "Scheduled Workers are not automatically triggered";
// biome-ignore lint/suspicious/noControlCharactersInRegex: wrangler colours its lines.
const COLOURS = /\x1b\[[0-9;]*m/g;

/**
 * A line filter for one of wrangler's streams: the warning's line goes, and with it the
 * indented and blank lines that follow it (how to trigger the cron by hand, a link); the
 * first line that starts at the margin again is passed on, as is everything else.
 */
export function withoutCronWarning(): Transform {
  let partial = "";
  let inWarning = false;
  const keep = (line: string) => {
    const plain = line.replace(COLOURS, "");
    if (plain.includes(CRON_WARNING)) {
      inWarning = true;
      return false;
    }
    if (inWarning && (plain.trim() === "" || /^\s/.test(plain))) return false;
    inWarning = false;
    return true;
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      const lines = (partial + chunk.toString("utf8")).split("\n");
      partial = lines.pop() ?? "";
      done(
        null,
        lines
          .filter(keep)
          .map((line) => `${line}\n`)
          .join(""),
      );
    },
    flush(done) {
      done(null, partial !== "" && keep(partial) ? partial : "");
    },
  });
}
