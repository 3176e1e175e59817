// A local Upstash-compatible REST gateway in front of a real redis-server, so
// @upstash/redis and @upstash/ratelimit run unmodified, with default options, in dev,
// tests and benchmarks. Why it exists and what it speaks: docs/architecture.md, "Local stack".
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Redis } from "ioredis";
import { BadRequestError, isBlocking, parseCommand, parseCommandList, refusal } from "./commands.js";
import { encodeOutcome, encodeOutcomes } from "./encoding.js";
import { bearerAuth, createResponder, hostCheck, MAX_LATENCY_MS, PayloadTooLargeError, parseRoute, readBody } from "./http.js";
import { REQUEST_TOO_LARGE, RecordLimit } from "./platform-limits.js";
import { Batcher, RedisConnections, RedisUnavailableError, runTransaction, TransactionAbortedError } from "./redis.js";
import { ScriptShas } from "./scripts.js";
import { serveSubscription } from "./subscribe.js";
import type { Outcome, PreparedCommand } from "./types.js";

export interface GatewayOptions {
  /** 0 or omitted: a free port. */
  port?: number;
  host?: string;
  redisUrl: string;
  token: string;
  maxBodyBytes?: number;
  /**
   * An emulated network round trip added to every Upstash request, half before its commands
   * run and half before the answer (and half to every pub/sub message): the hop from a
   * Worker to its Upstash region, which a gateway on the same machine does not have. 0 (the
   * default) adds nothing; at most MAX_LATENCY_MS.
   */
  latencyMs?: number;
  /** Host names it answers besides loopback ones (it refuses others: DNS rebinding). */
  allowedHosts?: string[];
  /**
   * Runs administrative commands (FLUSHALL, CONFIG, KEYS, ...), which it refuses by default:
   * as commands, and inside scripts through its own Redis user, which Redis denies @admin and
   * @dangerous (dev/gateway/restricted-user.ts; the Redis URL's user must be allowed ACL SETUSER).
   */
  allowAdminCommands?: boolean;
  /**
   * Upstash's limit on one request's size: a bigger body is refused as Upstash refuses it
   * (dev/gateway/platform-limits.ts), instead of the 413 of maxBodyBytes, which it replaces.
   */
  maxRequestBytes?: number;
  /** Upstash's limit on one record: writes to a key already holding more are refused. Omitted: no limit. */
  maxRecordBytes?: number;
}

export interface GatewayStats {
  /** Authorized calls to the Upstash routes: one per client round trip. */
  requests: number;
  /** Commands sent to Redis on behalf of clients. */
  commands: number;
  /** The requests' bodies and the replies' bodies, in bytes (what crosses the wire besides headers). */
  requestBytes: number;
  responseBytes: number;
}

export interface Gateway {
  port: number;
  url: string;
  close(): Promise<void>;
  stats(): GatewayStats;
  resetStats(): void;
}

export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;

export async function startGateway(options: GatewayOptions): Promise<Gateway> {
  if (!options.token) throw new Error("startGateway: a token is required");
  if ((options.latencyMs ?? 0) > MAX_LATENCY_MS) throw new Error(`startGateway: latencyMs is at most ${MAX_LATENCY_MS}`);
  const host = options.host ?? "127.0.0.1";
  const maxBodyBytes = options.maxRequestBytes ?? options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const authorized = bearerAuth(options.token);
  const hostAllowed = hostCheck(options.allowedHosts ?? []);
  const refusalOf = (command: string[]) => refusal(command, { allowAdminCommands: options.allowAdminCommands });
  const respond = createResponder();
  const redis = new RedisConnections(options.redisUrl, { allowAdminCommands: options.allowAdminCommands });
  const scripts = new ScriptShas();
  const batcher = new Batcher(redis.shared);
  const recordLimit = options.maxRecordBytes === undefined ? undefined : new RecordLimit(options.maxRecordBytes, redis.shared);
  const counters: GatewayStats = { requests: 0, commands: 0, requestBytes: 0, responseBytes: 0 };
  const resetStats = () => Object.assign(counters, { requests: 0, commands: 0, requestBytes: 0, responseBytes: 0 });
  /** Replies to a client's commands, their bytes counted. */
  const reply = (res: ServerResponse, status: number, body: string) => {
    counters.responseBytes += Buffer.byteLength(body);
    respond.json(res, status, body);
  };
  let latencyMs = options.latencyMs ?? 0;
  const hop = () => (latencyMs > 0 ? new Promise((resolve) => setTimeout(resolve, latencyMs / 2)) : undefined);

  /**
   * Runs a request's commands in order on one connection: a shared one, or a connection of
   * their own when one of them may block (dropped when done or when the client goes away).
   */
  async function execute(commands: string[][], res: ServerResponse): Promise<Outcome[]> {
    const outcomes: (Outcome | undefined)[] = [];
    const runnable: PreparedCommand[] = [];
    const oversized = (await recordLimit?.refusals(commands, batcher)) ?? [];
    for (const [i, command] of commands.entries()) {
      const refused = refusalOf(command) ?? oversized[i];
      outcomes.push(refused === undefined ? undefined : { ok: false, error: refused });
      if (refused === undefined) runnable.push(scripts.prepare(command));
    }
    counters.commands += runnable.length;
    let results: Outcome[] = [];
    if (runnable.length > 0 && commands.some(isBlocking)) {
      // Watched from before the connection opens: a client gone before or while it opened would
      // otherwise leave its BLPOP ... 0 holding a Redis connection for good (a busy run showed it).
      let gone = res.socket === null || res.socket.destroyed;
      let conn: Redis | undefined;
      res.once("close", () => {
        gone = true;
        if (conn) redis.drop(conn);
      });
      conn = await redis.openOneOff("gateway-blocking");
      if (gone) {
        redis.drop(conn);
        return commands.map(() => ({ ok: false, error: "ERR the client went away" }));
      }
      try {
        results = await new Batcher(conn).run(runnable);
      } finally {
        redis.drop(conn);
      }
    } else if (runnable.length > 0) {
      results = await batcher.run(runnable);
    }
    let next = 0;
    return outcomes.map((outcome) => outcome ?? (results[next++] as Outcome));
  }

  async function transaction(commands: string[][]): Promise<Outcome[]> {
    // Nothing runs when one command is refused, as Redis does with a command it rejects while queuing.
    const oversized = (await recordLimit?.refusals(commands, batcher)) ?? [];
    for (const [i, command] of commands.entries()) {
      const refused = refusalOf(command) ?? oversized[i];
      if (refused !== undefined) throw new TransactionAbortedError(refused);
    }
    const prepared = commands.map((command) => scripts.prepare(command));
    counters.commands += prepared.length;
    return redis.withTransactionConnection((conn) => runTransaction(conn, prepared));
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!hostAllowed(req.headers.host)) {
      return respond.error(
        res,
        403,
        "Forbidden: the Host is not a loopback name; start the gateway with --allow-host <name> to answer it",
      );
    }
    if (!authorized(req.headers.authorization)) {
      return respond.error(res, 401, "Unauthorized: missing or invalid bearer token");
    }
    const route = parseRoute(req.method, req.url);
    if (!route) return respond.error(res, 404, `No route for ${req.method} ${req.url}`);
    if (route.kind === "latency") {
      latencyMs = route.ms;
      return respond.json(res, 200, JSON.stringify({ latencyMs }));
    }
    if (route.kind === "stats" || route.kind === "stats-reset") {
      if (route.kind === "stats-reset") resetStats();
      return respond.json(res, 200, JSON.stringify(counters));
    }
    counters.requests++;
    if (route.kind === "subscribe") {
      counters.commands++;
      return serveSubscription(req, res, {
        ...route,
        open: () => redis.openOneOff("gateway-subscriber"),
        close: (conn) => redis.drop(conn),
        headers: respond.headers,
        delayMs: () => latencyMs / 2,
      });
    }
    const body = await readBody(req, maxBodyBytes);
    counters.requestBytes += body.length;
    const base64 = req.headers["upstash-encoding"]?.toString().toLowerCase() === "base64";
    await hop();
    if (route.kind === "command") {
      const [outcome] = (await execute([parseCommand(body)], res)) as [Outcome];
      await hop();
      // A failing single command is a 400 with Redis' text verbatim (clients look for NOSCRIPT).
      return reply(res, outcome.ok ? 200 : 400, encodeOutcome(outcome, base64));
    }
    const commands = parseCommandList(body);
    const outcomes = route.kind === "pipeline" ? await execute(commands, res) : await transaction(commands);
    await hop();
    reply(res, 200, encodeOutcomes(outcomes, base64));
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (error instanceof PayloadTooLargeError) {
        return options.maxRequestBytes === undefined
          ? respond.error(res, 413, error.message)
          : respond.error(res, 400, REQUEST_TOO_LARGE);
      }
      if (error instanceof BadRequestError || error instanceof TransactionAbortedError) {
        return respond.error(res, 400, error.message);
      }
      if (error instanceof RedisUnavailableError) return respond.error(res, error.status, error.message);
      console.error("[gateway] unexpected error", error);
      respond.error(res, 500, `Internal gateway error: ${(error as Error).message}`);
    });
  });

  // Clients keep connections open and reuse them; closing an idle one as a request arrives
  // on it makes the client see a reset, so idle connections live longer than the clients'.
  server.keepAliveTimeout = 65_000;

  await redis.connect();
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    // A stampede opens thousands of connections at once: a deep accept queue keeps the
    // kernel from resetting them (Node's default backlog is 511).
    server.listen({ port: options.port ?? 0, host, backlog: 4096 }, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(":") ? `[${host}]` : host;

  return {
    port,
    url: `http://${urlHost}:${port}`,
    stats: () => ({ ...counters }),
    resetStats: () => {
      resetStats();
    },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // Keep-alive sockets and open event streams.
      });
      await redis.close();
    },
  };
}
