// W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` that follows one
// order from its request through the queue and the outbox to its row in D1, and the trace a
// log line belongs to. Written by hand: the format is one line of hex, and a tracing SDK would
// bring exporters and a span model the Worker has no use for.
import { AsyncLocalStorage } from "node:async_hooks";

/** version 00, a 32-hex trace id, a 16-hex parent (span) id, 2-hex flags. */
export const TRACEPARENT_PATTERN = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

const ALL_ZEROS = /^0+$/;

function randomHex(bytes: number): string {
  return Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The trace id of a traceparent (its second field). */
export const traceIdOf = (traceparent: string): string => traceparent.slice(3, 35);

/**
 * The traceparent this Worker's work carries on: the caller's trace with a span id of its own
 * (the caller's span is this one's parent), or a new trace when the caller sent none or one the
 * spec says to ignore (another version's layout is read by its first four fields, as the spec asks).
 */
export function continueTrace(header: string | undefined): string {
  const fields = header?.trim().toLowerCase().split("-");
  const [version, traceId, parentId, flags] = fields ?? [];
  const valid =
    fields !== undefined &&
    /^[0-9a-f]{2}$/.test(version ?? "") &&
    version !== "ff" &&
    (version !== "00" || fields.length === 4) &&
    /^[0-9a-f]{32}$/.test(traceId ?? "") &&
    !ALL_ZEROS.test(traceId ?? "") &&
    /^[0-9a-f]{16}$/.test(parentId ?? "") &&
    !ALL_ZEROS.test(parentId ?? "") &&
    /^[0-9a-f]{2}$/.test(flags ?? "");
  return valid ? `00-${traceId}-${randomHex(8)}-${flags}` : `00-${randomHex(16)}-${randomHex(8)}-01`;
}

const current = new AsyncLocalStorage<string>();

/** Runs `work` as part of the trace `traceparent` names: every log line it writes carries the trace id. */
export const inTrace = <T>(traceparent: string, work: () => T): T => current.run(traceparent, work);

/** The traceparent of the work running now, if it belongs to one. */
export const currentTraceparent = (): string | undefined => current.getStore();
