// Structured logs: one JSON object per line, `level` and `message` first, then the fields,
// which Workers Logs indexes one by one. An error is logged as its class and the start of its
// message only: client errors quote what they sent or received (@upstash/redis appends the
// whole command, user ids and script source included, or the raw response body), and none
// of that belongs in logs. Messages are fixed text; values travel as fields. A line written
// while a request's (or an order's) trace runs carries its `traceId` (src/shared/trace.ts), so
// Workers Logs finds every line of one order by that field.
import { currentTraceparent, traceIdOf } from "./trace";

type Level = "info" | "warn" | "error";
export type LogFields = Record<string, string | number | boolean | null | undefined>;

const MAX_ERROR_MESSAGE = 160;
/** Where an error's message starts quoting a request, a response or a stack. */
const QUOTED_DATA = /, command was:|(?<=response body):|\n/;

/** What of an error may be logged: its class and a short message without what it quotes. */
export function errorSummary(err: unknown): { name: string; message: string } {
  if (!(err instanceof Error)) return { name: typeof err, message: "" };
  return { name: err.name, message: (err.message.split(QUOTED_DATA, 1)[0] as string).slice(0, MAX_ERROR_MESSAGE) };
}

function write(level: Level, message: string, fields: LogFields = {}, error?: unknown): void {
  const traceparent = currentTraceparent();
  const line = JSON.stringify({
    level,
    message,
    ...(traceparent !== undefined && { traceId: traceIdOf(traceparent) }),
    ...fields,
    ...(error !== undefined && { error: errorSummary(error) }),
  });
  if (level === "error") console.error(line);
  else if (level === "warn") console.warn(line);
  else console.log(line);
}

/**
 * `log.warn("what happened", { saleId }, err)`: a fixed message, its values as fields, and the
 * error if any. A line about one order outside its own trace (settlement, the re-drive) names
 * the order's trace in its fields (`traceId`), which take the place of the running one's.
 */
export const log = {
  info: (message: string, fields?: LogFields, error?: unknown) => write("info", message, fields, error),
  warn: (message: string, fields?: LogFields, error?: unknown) => write("warn", message, fields, error),
  error: (message: string, fields?: LogFields, error?: unknown) => write("error", message, fields, error),
};
