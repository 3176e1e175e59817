// Replies to JSON text, written by hand so bytes never pass through a lossy JS string
// on the base64 path and integers keep every digit.
import type { Outcome, Reply } from "./types.js";

/**
 * With `Upstash-Encoding: base64` every string at every depth is base64 of its bytes
 * (status replies too); otherwise strings are UTF-8 text. Integers stay JSON numbers,
 * nil stays null, arrays stay flat (RESP2 shapes).
 */
export function encodeReply(reply: Reply, base64: boolean): string {
  if (reply === null) return "null";
  if (typeof reply === "string") return reply; // An integer reply, already decimal digits.
  if (Buffer.isBuffer(reply)) return base64 ? `"${reply.toString("base64")}"` : JSON.stringify(reply.toString("utf8"));
  if (Array.isArray(reply)) return `[${reply.map((item) => encodeReply(item, base64)).join(",")}]`;
  // An error nested in an array (e.g. a script's table): its text, encoded like any string.
  return encodeReply(Buffer.from(reply.message), base64);
}

export function encodeOutcome(outcome: Outcome, base64: boolean): string {
  return outcome.ok ? `{"result":${encodeReply(outcome.value, base64)}}` : errorBody(outcome.error);
}

export function encodeOutcomes(outcomes: Outcome[], base64: boolean): string {
  return `[${outcomes.map((outcome) => encodeOutcome(outcome, base64)).join(",")}]`;
}

/** Error texts are never base64-encoded. */
export function errorBody(message: string): string {
  return JSON.stringify({ error: message });
}
