// A count of what the platforms bill (per action, per unit of it, or per isolate and second),
// and the little arithmetic the counting does with counts: each figure divided, multiplied,
// taken from another, split into its Upstash part and the rest.
import { createHash } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "../../dev/lib/project.ts";
import { emptyTally, type Tally } from "../runner/meter.ts";

/** What one action cost, per unit of it (a request, an order, an entry...). */
export interface Counts {
  workerRequests: number;
  subrequests: number;
  upstashRequests: number;
  upstashCommands: number;
  /** The requests' and the replies' bodies at the gateway. */
  upstashRequestBytes: number;
  upstashResponseBytes: number;
  /** Upstash commands by name, scripts by their file (EVALSHA checkout, ...). */
  commands: Record<string, number>;
  /** Messages sent to every queue, and delivered to a consumer (a retry counts again). */
  queueMessages: number;
  queueDeliveries: number;
  d1Statements: number;
  d1RowsRead: number;
  d1RowsWritten: number;
}

/** The Worker's Lua scripts by the SHA1 the Upstash client sends them under. */
export function scriptNames(): Map<string, string> {
  const dir = path.join(ROOT, "lua");
  return new Map(
    readdirSync(dir)
      .filter((f) => f.endsWith(".lua"))
      .map((f) => [
        createHash("sha1")
          .update(readFileSync(path.join(dir, f), "utf8"))
          .digest("hex"),
        f.replace(/\.lua$/, ""),
      ]),
  );
}

/** Upstash commands by name, each EVALSHA named by its script's file (another library's script as such). */
export function namedCommands(byCommand: Record<string, number>, names: Map<string, string>): Record<string, number> {
  const named: Record<string, number> = {};
  for (const [command, n] of Object.entries(byCommand)) {
    const [verb, sha] = command.split(" ");
    const name = sha === undefined ? command : `${verb} ${names.get(sha) ?? "(a library's script)"}`;
    named[name] = (named[name] ?? 0) + n;
  }
  return named;
}

/** What the gateway counted for a piece of work: Upstash's side of the same requests. */
export interface GatewayCounts {
  requests: number;
  commands: number;
  requestBytes: number;
  responseBytes: number;
}

/** A tally as counts: the Upstash figures the gateway's where it counted them, commands by name from the Worker's side. */
export function countsOf(t: Tally, names: Map<string, string>, gateway?: GatewayCounts): Counts {
  const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
  return {
    workerRequests: t.invocations,
    subrequests: t.subrequests,
    upstashRequests: gateway?.requests ?? t.upstash.requests,
    upstashCommands: gateway?.commands ?? t.upstash.commands,
    upstashRequestBytes: gateway?.requestBytes ?? t.upstash.bytes,
    upstashResponseBytes: gateway?.responseBytes ?? 0,
    commands: namedCommands(t.upstash.byCommand, names),
    queueMessages: Object.values(t.sent).reduce((n, s) => n + s.messages, 0),
    queueDeliveries: sum(t.delivered),
    d1Statements: t.d1.statements,
    d1RowsRead: t.d1.rowsRead,
    d1RowsWritten: t.d1.rowsWritten,
  };
}

/** `c` divided by `units`. */
export function per(c: Counts, units: number): Counts {
  const each = (n: number) => n / units;
  return {
    workerRequests: each(c.workerRequests),
    subrequests: each(c.subrequests),
    upstashRequests: each(c.upstashRequests),
    upstashCommands: each(c.upstashCommands),
    upstashRequestBytes: each(c.upstashRequestBytes),
    upstashResponseBytes: each(c.upstashResponseBytes),
    commands: Object.fromEntries(Object.entries(c.commands).map(([k, n]) => [k, each(n)])),
    queueMessages: each(c.queueMessages),
    queueDeliveries: each(c.queueDeliveries),
    d1Statements: each(c.d1Statements),
    d1RowsRead: each(c.d1RowsRead),
    d1RowsWritten: each(c.d1RowsWritten),
  };
}

/** `c` times `n`. */
export const times = (c: Counts, n: number): Counts => per(c, 1 / n);

export const zeroCounts = (): Counts => countsOf(emptyTally(), new Map());

/** `a` less `b`, field by field. */
export function minus(a: Counts, b: Counts): Counts {
  const commands = { ...a.commands };
  for (const [k, n] of Object.entries(b.commands)) {
    commands[k] = (commands[k] ?? 0) - n;
    if (commands[k] === 0) delete commands[k];
  }
  return {
    workerRequests: a.workerRequests - b.workerRequests,
    subrequests: a.subrequests - b.subrequests,
    upstashRequests: a.upstashRequests - b.upstashRequests,
    upstashCommands: a.upstashCommands - b.upstashCommands,
    upstashRequestBytes: a.upstashRequestBytes - b.upstashRequestBytes,
    upstashResponseBytes: a.upstashResponseBytes - b.upstashResponseBytes,
    commands,
    queueMessages: a.queueMessages - b.queueMessages,
    queueDeliveries: a.queueDeliveries - b.queueDeliveries,
    d1Statements: a.d1Statements - b.d1Statements,
    d1RowsRead: a.d1RowsRead - b.d1RowsRead,
    d1RowsWritten: a.d1RowsWritten - b.d1RowsWritten,
  };
}

/** The Upstash part of `c` (requests, commands, bytes), every other count zero. */
export function upstashPart(c: Counts): Counts {
  return {
    ...zeroCounts(),
    subrequests: c.upstashRequests,
    upstashRequests: c.upstashRequests,
    upstashCommands: c.upstashCommands,
    upstashRequestBytes: c.upstashRequestBytes,
    upstashResponseBytes: c.upstashResponseBytes,
    commands: c.commands,
  };
}

/** `c` with every count below zero set to zero. */
export function atLeastZero(c: Counts): Counts {
  const floor = (n: number) => Math.max(0, n);
  return {
    ...(Object.fromEntries(Object.entries(c).map(([k, v]) => [k, typeof v === "number" ? floor(v) : v])) as unknown as Counts),
    commands: Object.fromEntries(Object.entries(c.commands).filter(([, n]) => n > 0)),
  };
}

/** The Upstash fields of `c`. */
export function upstashFields(c: Counts) {
  const { subrequests, upstashRequests, upstashCommands, upstashRequestBytes, upstashResponseBytes, commands } = c;
  return { subrequests, upstashRequests, upstashCommands, upstashRequestBytes, upstashResponseBytes, commands };
}

/** `c` without its Upstash part. */
export const withoutUpstashOf = (c: Counts): Counts => minus(c, upstashPart(c));
