// The Worker on Miniflare, driven from Node: the same bundle `wrangler deploy` ships, with
// local D1 and Queues. Used by the node-side tests, the load runner and the benchmarks,
// where requests go straight to workerd's socket, several times cheaper than through wrangler
// dev's proxy.
import { mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { Log, LogLevel, Miniflare, type MiniflareOptions, type WorkerOptions } from "miniflare";
import { Agent, type Dispatcher, Headers as UndiciHeaders, fetch as undiciFetch } from "undici";
import { prepareLocalD1, workerBundle, workerConfig } from "./wrangler-cache.ts";

/** The queue whose consumer settings `ordersConsumer` overrides. */
const ORDERS_QUEUE = "flash-sale-orders";

export interface WorkerSecrets {
  ADMIN_TOKEN: string;
  JWT_SECRET: string;
  ORDER_ID_KEY: string;
  PAYMENT_WEBHOOK_SECRET?: string;
  ORDER_EVENT_SECRETS_KEY?: string;
  UPSTASH_REDIS_REST_URL: string;
  UPSTASH_REDIS_REST_TOKEN: string;
  /** The quorum lock's databases (JSON URL/token pairs), when the stack runs them. */
  LOCK_QUORUM_NODES?: string;
}

export interface LocalWorker {
  mf: Miniflare;
  /** The bundle it runs. */
  bundlePath: string;
  fetch(pathname: string, init?: RequestInit): Promise<Response>;
  /** Runs the Worker's scheduled handler once, as the cron trigger would. */
  scheduled(): Promise<void>;
  /** Miniflare's last lines about the batches its queues delivered (when, how many acked): where a drain stalled. */
  queueLog(): string[];
  /** When the orders queue last finished delivering a batch (ms since the epoch; when the worker started, before any). */
  ordersDeliveredAt(): number;
  /** Runs statements on local D1 as one batch (through the D1 gate, see D1_GATE); their results in order. */
  d1(statements: readonly D1Statement[]): Promise<LocalD1Result[]>;
  /** The rows of one statement (a read or a write) on local D1, as `d1` runs it. */
  query<T>(sql: string, ...params: unknown[]): Promise<T[]>;
  /**
   * Restarts the local runtime on the same options: local D1 is kept (on disk); what its
   * queues and Durable Objects held in memory is lost, as a crashed runtime loses it.
   */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * The Worker's log lines a tool shows unless told otherwise: warnings and errors, on stderr. Its
 * info lines (one per order reserved or settled) would bury a tool's own output, and stdout is
 * the tool's (a `--json` summary is read from it).
 */
function workerWarningsToStderr(log: { level: string; message: string }): void {
  if (log.level === "warn" || log.level === "error") console.error(log.message);
}

/** One statement for local D1: its SQL and the values bound to it. */
export interface D1Statement {
  sql: string;
  params?: unknown[];
}

/** What local D1 answers for one statement: its rows (none for a write) and D1's meta. */
export interface LocalD1Result {
  results: unknown[];
  meta: Record<string, unknown>;
}

/** The local D1 database the Worker's `DB` binds, by the id wrangler.toml's local runs use. */
const LOCAL_D1 = { DB: "00000000-0000-0000-0000-000000000000" };

/**
 * A second Worker in the same runtime, bound to the same local D1, that runs a batch of
 * statements Node posts to it. Node reads and writes local D1 through it with requests it
 * awaits like any other, never through Miniflare's D1 proxy: that proxy makes calls such as
 * `prepare`, `bind` and a method's first call synchronously, Atomics.wait on Node's main thread
 * until workerd answers, and a workerd meanwhile writing its logs to Node (its stdout, which
 * only Node's main thread drains) or awaiting Node's loopback waited on Node in turn: busy test
 * runs hung for good there, no timer left to end them.
 */
const D1_GATE = {
  name: "d1-gate",
  modules: true,
  script: `export default {
  async fetch(request, env) {
    const statements = await request.json();
    try {
      const results = await env.DB.batch(statements.map((s) => env.DB.prepare(s.sql).bind(...(s.params ?? []))));
      return Response.json(results);
    } catch (err) {
      return Response.json({ error: String(err?.message ?? err) }, { status: 500 });
    }
  },
};`,
  d1Databases: LOCAL_D1,
};

/** Runs `statements` as one D1 batch through the D1 gate; their results in order. */
async function d1Batch(entry: URL, connections: Dispatcher, statements: readonly D1Statement[]): Promise<LocalD1Result[]> {
  const res = await undiciFetch(new URL("/", entry), {
    method: "POST",
    headers: { "MF-Route-Override": D1_GATE.name, "Content-Type": "application/json" },
    body: JSON.stringify(statements),
    dispatcher: connections,
  });
  const answer = (await res.json()) as LocalD1Result[] | { error: string };
  if ("error" in answer) throw new Error(`local D1: ${answer.error}`);
  return answer;
}

/** How many of Miniflare's queue lines a worker keeps. */
const QUEUE_LOG_LINES = 20;

/**
 * Miniflare's log: its warnings and errors printed as before; its line per queue batch (at
 * info) kept, the last few, stamped with the time it arrived, and nothing else printed.
 */
class StackLog extends Log {
  readonly queueLines: string[] = [];
  ordersDeliveredAt = Date.now();

  constructor() {
    super(LogLevel.INFO);
  }

  override logWithLevel(level: LogLevel, message: string): void {
    if (level <= LogLevel.WARN) {
      super.logWithLevel(level, message);
      return;
    }
    if (!message.includes("QUEUE")) return;
    // biome-ignore lint/suspicious/noControlCharactersInRegex: Miniflare colours its lines.
    const line = message.replace(/\x1b\[[0-9;]*m/g, "");
    if (line.includes(`QUEUE ${ORDERS_QUEUE} `)) this.ordersDeliveredAt = Date.now();
    this.queueLines.push(`${new Date().toISOString()} ${line}`);
    if (this.queueLines.length > QUEUE_LOG_LINES) this.queueLines.shift();
  }
}

/**
 * Requests to workerd, as dispatchFetch sends them (a connection each, closed after its
 * answer: kept alive, a busy run's requests met ECONNRESET on connections workerd had closed
 * meanwhile), but asking for no compression. dispatchFetch accepts gzip, so workerd
 * compressed every JSON reply and Node inflated it again (compression is the edge's work in
 * production, not the Worker's), and Miniflare's line per request came to Node as a request
 * of its own. Run back to back, a 10,000-buyer crowd took 14.1 s of Node's CPU and 17.3 s of
 * workerd's and the gateway's that way, 8.2 s and 14.2 s this way.
 */
function connectionsToWorkerd(): Dispatcher {
  return new Agent().compose((dispatch) => (options, handler) => dispatch({ ...options, reset: true }, handler));
}

/**
 * Runs the Worker's scheduled handler once, as the cron does, by a request to Miniflare's
 * trigger route: an answer Node awaits like any other. Through the proxy of `mf.getWorker()`
 * the first `scheduled()` was a synchronous call (Atomics.wait on Node's main thread, see
 * asyncD1), and a run whose queue broker posted its batch log to Node meanwhile waited on Node
 * while Node waited on the run: busy test runs hung for good there. The route goes to the
 * Worker by its name ("", MF-Route-Override): by default it reaches the static assets' router
 * first, which has no scheduled handler. The handler's outcome is not an error here, as with
 * the proxy (a failed run is the next run's to redo).
 */
async function scheduledOnce(entry: URL, connections: Dispatcher): Promise<void> {
  const res = await undiciFetch(new URL("/cdn-cgi/handler/scheduled?cron=*+*+*+*+*", entry), {
    headers: { "MF-Route-Override": "" },
    dispatcher: connections,
  });
  await res.arrayBuffer();
}

/** Overrides of wrangler.toml's orders consumer (Queues allows batches of 1-100 and timeouts of 0-60 s). */
export interface QueueConsumerOptions {
  maxBatchSize?: number;
  maxBatchTimeout?: number;
}

export async function startLocalWorker(opts: {
  secrets: WorkerSecrets;
  vars?: Record<string, string>;
  stateDir?: string;
  /** Overrides wrangler.toml's consumer settings for the orders queue. */
  ordersConsumer?: QueueConsumerOptions;
  /** No consumer on the orders queue: accepted orders stay queued (to measure the requests alone). */
  unsettled?: boolean;
  /** Opens workerd's inspector (Chrome DevTools protocol) here, on an unminified bundle, for a CPU profiler. */
  inspectorPort?: number;
  /** Receives the Worker's console output (e.g. to count or quiet it); by default its warnings and errors go to stderr. */
  onLog?: (log: { level: string; message: string }) => void;
  /**
   * A module run as the Worker's main module in place of the bundle's: it imports the bundle
   * as "./index.js" and may stand in for one of its handlers (a benchmark's probe).
   */
  wrapper?: string;
}): Promise<LocalWorker> {
  const ownsState = !opts.stateDir;
  const stateDir = opts.stateDir ?? mkdtempSync(path.join(tmpdir(), "flash-sale-"));
  const bundlePath = workerBundle({ minify: opts.inspectorPort === undefined });
  const wrapped = opts.wrapper === undefined ? undefined : wrapBundle(bundlePath, opts.wrapper);
  const scriptPath = wrapped?.scriptPath ?? bundlePath;
  prepareLocalD1(stateDir);

  // Vars, dates and flags come from wrangler.toml, so this runs what `wrangler dev` runs.
  const config = workerConfig();
  const log = new StackLog();
  const worker: WorkerOptions = {
    modules: true,
    scriptPath,
    modulesRoot: path.dirname(scriptPath),
    // The bundle is an ES module (a wrapper imports it as ./index.js, which Miniflare would read as CommonJS).
    modulesRules: [
      { type: "Text", include: ["**/*.lua"] },
      { type: "ESModule", include: ["**/*.js", "**/*.mjs"] },
    ],
    assets: config.assets,
    // SQLite-backed, in memory: lab sales are throwaway.
    durableObjects: config.durableObjects,
    analyticsEngineDatasets: config.analyticsEngineDatasets,
    compatibilityDate: config.compatibilityDate,
    compatibilityFlags: config.compatibilityFlags,
    bindings: {
      ...config.vars,
      ...opts.secrets,
      ...opts.vars,
    },
    d1Databases: LOCAL_D1,
    queueProducers: Object.fromEntries(config.queueProducers.map((p) => [p.binding, { queueName: p.queue }])),
    queueConsumers: Object.fromEntries(
      config.queueConsumers
        .filter((c) => !(opts.unsettled && c.queue === ORDERS_QUEUE))
        .map((c) => [
          c.queue,
          {
            maxBatchSize: c.max_batch_size,
            maxBatchTimeout: c.max_batch_timeout,
            maxRetries: c.max_retries,
            deadLetterQueue: c.dead_letter_queue,
            ...(c.queue === ORDERS_QUEUE && opts.ordersConsumer),
          },
        ]),
    ),
  };
  const options: MiniflareOptions = {
    log,
    // Miniflare's line per request reaches Node as a request of its own, and this log drops it.
    logRequests: false,
    // scheduled() asks for the cron's run with a request (see scheduledOnce).
    unsafeTriggerHandlers: true,
    cf: false, // no network: never fetch the `Request.cf` placeholder
    ...(opts.inspectorPort !== undefined && { inspectorPort: opts.inspectorPort }),
    handleStructuredLogs: opts.onLog ?? workerWarningsToStderr,
    d1Persist: path.join(stateDir, "v3", "d1"),
    // The Worker first: requests without a route go to it.
    workers: [worker, { ...D1_GATE, compatibilityDate: config.compatibilityDate }],
  };
  const mf = new Miniflare(options);
  let entry = await mf.ready;
  let connections = connectionsToWorkerd();
  const d1 = (statements: readonly D1Statement[]) => d1Batch(entry, connections, statements);

  return {
    mf,
    bundlePath,
    fetch: (pathname, init) => {
      const headers = new UndiciHeaders(init?.headers as ConstructorParameters<typeof UndiciHeaders>[0]);
      // The URL the Worker sees, as with dispatchFetch; errors answered as the Worker answers them.
      headers.set("MF-Original-URL", `http://flash.local${pathname}`);
      headers.set("MF-Disable-Pretty-Error", "true");
      if (!headers.has("Accept-Encoding")) headers.set("Accept-Encoding", "identity");
      const sent = undiciFetch(new URL(pathname, entry), { ...(init as object), headers, dispatcher: connections });
      return sent as unknown as Promise<Response>;
    },
    scheduled: () => scheduledOnce(entry, connections),
    queueLog: () => [...log.queueLines],
    d1,
    query: async <T>(sql: string, ...params: unknown[]) => ((await d1([{ sql, params }]))[0]?.results ?? []) as T[],
    ordersDeliveredAt: () => log.ordersDeliveredAt,
    restart: async () => {
      await connections.destroy();
      connections = connectionsToWorkerd();
      await mf.setOptions(options);
      entry = await mf.ready;
      log.ordersDeliveredAt = Date.now();
    },
    stop: async () => {
      await connections.destroy();
      await mf.dispose();
      if (ownsState) rmSync(stateDir, { recursive: true, force: true });
      if (wrapped) rmSync(wrapped.dir, { recursive: true, force: true });
    },
  };
}

/** The bundle's files linked into a directory of their own beside `wrapper`, the main module. */
function wrapBundle(bundlePath: string, wrapper: string): { dir: string; scriptPath: string } {
  const dir = mkdtempSync(path.join(tmpdir(), "flash-sale-wrapped-"));
  const bundleDir = path.dirname(bundlePath);
  for (const name of readdirSync(bundleDir)) symlinkSync(path.join(bundleDir, name), path.join(dir, name));
  const scriptPath = path.join(dir, "wrapper.mjs");
  writeFileSync(scriptPath, wrapper);
  return { dir, scriptPath };
}
