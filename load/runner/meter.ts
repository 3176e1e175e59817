// What the platforms bill, counted inside the local Worker: a wrapper around the Worker's own
// bundle (StackOptions.wrapper) that hands every request, batch and cron run to it unchanged
// and counts, per kind of invocation (a request, a batch of each queue, the cron):
//   invocations        what Workers bills as requests
//   subrequests        every fetch() the Worker makes (Upstash's REST calls among them)
//   Upstash            requests, commands (by name; EVALSHA by script SHA) and body bytes, read
//                      from the REST calls themselves (the gateway counts the same from its side)
//   D1                 statements, and rows read and written as D1 itself reports them in each
//                      result's meta (rows_read, rows_written): what D1 bills
//   queue sends        messages and their bytes, per queue (Queues bills 3 operations a message:
//                      written, read, deleted)
//   deliveries         messages handed to the Worker's consumers, per queue (a retry is another)
// The invocation kind follows the work through awaits and timers (AsyncLocalStorage), so an
// outbox clear made by the settlement batch counts as the batch's, not the request's.
//
// Counting D1 rows needs each statement's meta: `first()` answers a row without it, so the
// meter runs it as `all()` and hands back the first row, which is the same query and the same
// rows to D1 (first() adds no LIMIT). Nothing else the Worker calls is changed.
import type { Stack } from "../../dev/stack/local-stack.ts";
import { workerConfig } from "../../dev/stack/wrangler-cache.ts";

/** What one kind of invocation cost. */
export interface Tally {
  invocations: number;
  subrequests: number;
  upstash: { requests: number; commands: number; bytes: number; byCommand: Record<string, number> };
  d1: { statements: number; rowsRead: number; rowsWritten: number };
  /** Messages sent, per queue, and their JSON bytes; `delayed` of them with a delay. */
  sent: Record<string, { messages: number; bytes: number; delayed: number }>;
  /** Messages delivered to the consumer, per queue. */
  delivered: Record<string, number>;
}

/** Tallies by invocation kind: "fetch", "queue:<queue>", "scheduled" (and "other" for work outside any). */
export interface MeterReading {
  byKind: Record<string, Tally>;
  /** Invocations and their waitUntil work still running. */
  inFlight: number;
}

/** The wrapper module: the bundle's Worker, counted. Queue bindings are named from wrangler.toml. */
export function meterWrapper(): string {
  const queues = Object.fromEntries(workerConfig().queueProducers.map((p) => [p.binding, p.queue]));
  return `
import { AsyncLocalStorage } from "node:async_hooks";
import worker from "./index.js";
export * from "./index.js";
const QUEUES = ${JSON.stringify(queues)};
const kindOf = new AsyncLocalStorage();
let byKind = {};
let inFlight = 0;
let upstashOrigin;
const tally = () => {
  const kind = kindOf.getStore() ?? "other";
  return (byKind[kind] ??= {
    invocations: 0,
    subrequests: 0,
    upstash: { requests: 0, commands: 0, bytes: 0, byCommand: {} },
    d1: { statements: 0, rowsRead: 0, rowsWritten: 0 },
    sent: {},
    delivered: {},
  });
};
const bytes = (text) => new TextEncoder().encode(text).length;
const named = (command) => {
  const name = String(command[0]).toUpperCase();
  return name === "EVALSHA" || name === "EVALSHA_RO" ? name + " " + command[1] : name;
};
const realFetch = globalThis.fetch;
globalThis.fetch = (input, init) => {
  const t = tally();
  t.subrequests++;
  const url = typeof input === "string" ? input : input instanceof URL ? input.href : input.url;
  if (upstashOrigin && url.startsWith(upstashOrigin)) {
    t.upstash.requests++;
    const body = typeof init?.body === "string" ? init.body : "";
    t.upstash.bytes += bytes(body);
    const parsed = body ? JSON.parse(body) : [];
    const commands = Array.isArray(parsed[0]) ? parsed : [parsed];
    t.upstash.commands += commands.length;
    for (const command of commands) t.upstash.byCommand[named(command)] = (t.upstash.byCommand[named(command)] ?? 0) + 1;
  }
  return realFetch(input, init);
};
const read = (meta) => {
  const d1 = tally().d1;
  d1.statements++;
  d1.rowsRead += meta?.rows_read ?? 0;
  d1.rowsWritten += meta?.rows_written ?? 0;
};
const statements = new WeakMap();
const statement = (real) => {
  const metered = {
    bind: (...values) => statement(real.bind(...values)),
    run: async () => { const r = await real.run(); read(r.meta); return r; },
    all: async () => { const r = await real.all(); read(r.meta); return r; },
    first: async (column) => {
      const r = await real.all();
      read(r.meta);
      const row = r.results[0];
      return row === undefined ? null : column === undefined ? row : row[column];
    },
    raw: (...args) => real.raw(...args),
  };
  statements.set(metered, real);
  return metered;
};
const meteredDb = (db) => ({
  prepare: (sql) => statement(db.prepare(sql)),
  batch: async (list) => {
    const results = await db.batch(list.map((s) => statements.get(s) ?? s));
    for (const r of results) read(r.meta);
    return results;
  },
  exec: (sql) => db.exec(sql),
  withSession: (...args) => db.withSession(...args),
  dump: () => db.dump(),
});
const sentTo = (queue, body, options) => {
  const sent = (tally().sent[queue] ??= { messages: 0, bytes: 0, delayed: 0 });
  sent.messages++;
  sent.bytes += bytes(JSON.stringify(body));
  if (options?.delaySeconds) sent.delayed++;
};
const meteredQueue = (queue, real) => ({
  send: (body, options) => { sentTo(queue, body, options); return real.send(body, options); },
  sendBatch: (messages, options) => {
    for (const m of messages) sentTo(queue, m.body, { delaySeconds: m.delaySeconds ?? options?.delaySeconds });
    return real.sendBatch(messages, options);
  },
});
// One metered env per env, as the Worker's per-env memos expect.
const metered = new WeakMap();
const meteredEnv = (env) => {
  let own = metered.get(env);
  if (!own) {
    upstashOrigin = env.UPSTASH_REDIS_REST_URL;
    own = { ...env, DB: meteredDb(env.DB) };
    for (const [binding, queue] of Object.entries(QUEUES)) own[binding] = meteredQueue(queue, env[binding]);
    metered.set(env, own);
  }
  return own;
};
const tracked = (promise) => {
  inFlight++;
  return Promise.resolve(promise).finally(() => inFlight--);
};
const meteredCtx = (ctx) => ({
  waitUntil: (work) => ctx.waitUntil(tracked(work)),
  passThroughOnException: () => ctx.passThroughOnException(),
  props: ctx.props,
});
const invoke = (kind, run) =>
  kindOf.run(kind, () => {
    tally().invocations++;
    return tracked(run());
  });
export default {
  fetch(request, env, ctx) {
    const path = new URL(request.url).pathname;
    if (path === "/__meter") return Response.json({ byKind, inFlight });
    if (path === "/__meter/reset") {
      byKind = {};
      return Response.json({ byKind, inFlight });
    }
    return invoke("fetch", () => worker.fetch(request, meteredEnv(env), meteredCtx(ctx)));
  },
  queue(batch, env, ctx) {
    return invoke("queue:" + batch.queue, () => {
      const delivered = tally().delivered;
      delivered[batch.queue] = (delivered[batch.queue] ?? 0) + batch.messages.length;
      return worker.queue(batch, meteredEnv(env), meteredCtx(ctx));
    });
  },
  scheduled(controller, env, ctx) {
    return invoke("scheduled", () => worker.scheduled(controller, meteredEnv(env), meteredCtx(ctx)));
  },
};
`;
}

export async function readMeter(stack: Stack): Promise<MeterReading> {
  return (await (await stack.worker.fetch("/__meter")).json()) as MeterReading;
}

export async function resetMeter(stack: Stack): Promise<void> {
  await (await stack.worker.fetch("/__meter/reset", { method: "POST" })).arrayBuffer();
}

/** Every kind's tally added up. */
export function totalOf(reading: MeterReading): Tally {
  const total = emptyTally();
  for (const t of Object.values(reading.byKind)) addInto(total, t);
  return total;
}

export function emptyTally(): Tally {
  return {
    invocations: 0,
    subrequests: 0,
    upstash: { requests: 0, commands: 0, bytes: 0, byCommand: {} },
    d1: { statements: 0, rowsRead: 0, rowsWritten: 0 },
    sent: {},
    delivered: {},
  };
}

/** Adds `t` into `into`. */
export function addInto(into: Tally, t: Tally): void {
  into.invocations += t.invocations;
  into.subrequests += t.subrequests;
  into.upstash.requests += t.upstash.requests;
  into.upstash.commands += t.upstash.commands;
  into.upstash.bytes += t.upstash.bytes;
  for (const [name, n] of Object.entries(t.upstash.byCommand))
    into.upstash.byCommand[name] = (into.upstash.byCommand[name] ?? 0) + n;
  into.d1.statements += t.d1.statements;
  into.d1.rowsRead += t.d1.rowsRead;
  into.d1.rowsWritten += t.d1.rowsWritten;
  for (const [queue, s] of Object.entries(t.sent)) {
    const sum = into.sent[queue] ?? { messages: 0, bytes: 0, delayed: 0 };
    into.sent[queue] = { messages: sum.messages + s.messages, bytes: sum.bytes + s.bytes, delayed: sum.delayed + s.delayed };
  }
  for (const [queue, n] of Object.entries(t.delivered)) into.delivered[queue] = (into.delivered[queue] ?? 0) + n;
}
