// The whole local stack in one process tree: redis-server, the gateway (its own process),
// the Worker on Miniflare with local D1 and Queues. The Node-side tests, the load runner and
// the benchmarks drive it through its typed API client.
import type { ReconciliationReport } from "../../src/shared/api-types.ts";
import { type GatewayProcess, spawnGateway } from "../gateway/process.ts";
import { ApiClient } from "../lib/api-client.ts";
import { orderIdCipher } from "../lib/order-ids.ts";
import { type RedisServer, startRedisServer } from "../lib/redis-server.ts";
import { eventually } from "../lib/wait.ts";
import { type LocalSecrets, localSecrets, randomSecrets } from "./local-secrets.ts";
import { type LocalWorker, type QueueConsumerOptions, startLocalWorker } from "./miniflare-worker.ts";

/** One independent database of the quorum lock: a redis-server and its gateway. */
export interface QuorumNode {
  redis: RedisServer;
  gateway: GatewayProcess;
}

export interface Stack {
  redis: RedisServer;
  /** Its own process, as in production: the harness and the gateway do not share a thread. */
  gateway: GatewayProcess;
  /** The quorum lock's databases (StackOptions.quorumNodes), passed to the Worker as LOCK_QUORUM_NODES. */
  quorum: QuorumNode[];
  worker: LocalWorker;
  /** The API, as an admin (and minting user tokens the Worker accepts). */
  api: ApiClient;
  /** This stack's own random secrets. */
  secrets: LocalSecrets;
  /** The orders D1 confirmed for a sale. */
  settledOrders(saleId: string): Promise<{ orderId: string; userId: string }[]>;
  /** waitForDrain within DRAIN_BOUND_MS, the cron's re-drive run meanwhile, the queues' last batches told on a timeout. */
  drain(saleId: string, expectSettled: number): Promise<ReconciliationReport>;
  stop(): Promise<void>;
}

export interface StackOptions {
  /** The Worker's settings over wrangler.toml's; REDIS_MAX_RECORD_BYTES and REDIS_MAX_REQUEST_BYTES given here bind the gateway too, as Upstash would. */
  vars?: Record<string, string>;
  /** AOF persistence here: a stack started again on the same dir finds Redis' data. */
  redisDataDir?: string;
  /** Local D1 here, kept by stop(): a stack started again on the same dir finds it. */
  stateDir?: string;
  /** Overrides wrangler.toml's consumer settings for the orders queue. */
  ordersConsumer?: QueueConsumerOptions;
  /** No consumer on the orders queue: accepted orders stay queued (to measure the requests alone). */
  unsettled?: boolean;
  /** Opens workerd's inspector here, on an unminified bundle (see load/runner/profile.ts). */
  inspectorPort?: number;
  /** Receives the Worker's console output (by default its warnings and errors go to stderr). */
  onWorkerLog?: (log: { level: string; message: string }) => void;
  /** Independent redis-server + gateway pairs to start for the quorum lock (the lab's redlock); none by default. */
  quorumNodes?: number;
  /** A module run as the Worker's main module, importing the bundle as "./index.js" (see startLocalWorker). */
  wrapper?: string;
}

async function startQuorumNode(
  secrets: LocalSecrets,
  begin: <T extends Stoppable>(start: Promise<T>) => Promise<T>,
): Promise<QuorumNode> {
  const redis = await begin(startRedisServer({ password: secrets.REDIS_PASSWORD }));
  return { redis, gateway: await begin(spawnGateway({ redisUrl: redis.url, token: secrets.GATEWAY_TOKEN })) };
}

interface Stoppable {
  stop(): Promise<void>;
}

/** The global per-address limits turned off ("0"): a crowd played from one machine is one address. */
const NO_GLOBAL_IP_LIMITS = {
  QUEUE_JOINS_PER_IP_PER_MIN: "0",
  DRAW_ENTRIES_PER_IP_PER_MIN: "0",
  DEV_LOGINS_PER_IP_PER_MIN: "0",
  ORDER_CHANGES_PER_IP_PER_MIN: "0",
  ORDER_READS_PER_IP_PER_MIN: "0",
};

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  // A stack started again on the same state keeps its order-id key: the ids it handed out
  // still name the same orders.
  const secrets = { ...randomSecrets(), ...(opts.stateDir && { ORDER_ID_KEY: localSecrets(opts.stateDir).ORDER_ID_KEY }) };
  // Every part that has started, stopped in reverse by stop(), and at once when a later step
  // throws: a stack that fails half-way leaves nothing running.
  const started: Stoppable[] = [];
  const begin = async <T extends Stoppable>(start: Promise<T>): Promise<T> => {
    const part = await start;
    started.push(part);
    return part;
  };
  const stop = async () => {
    for (const part of started.splice(0).reverse()) await part.stop();
  };
  try {
    const redis = await begin(startRedisServer({ dataDir: opts.redisDataDir, password: secrets.REDIS_PASSWORD }));
    const limit = (name: string) => (opts.vars?.[name] === undefined ? undefined : Number(opts.vars[name]));
    const gateway = await begin(
      spawnGateway({
        redisUrl: redis.url,
        token: secrets.GATEWAY_TOKEN,
        maxRecordBytes: limit("REDIS_MAX_RECORD_BYTES"),
        maxRequestBytes: limit("REDIS_MAX_REQUEST_BYTES"),
      }),
    );
    const quorum: QuorumNode[] = [];
    for (let i = 0; i < (opts.quorumNodes ?? 0); i++) quorum.push(await startQuorumNode(secrets, begin));
    const quorumConfig = quorum.map((node) => ({ url: node.gateway.url, token: node.gateway.token }));
    const worker = await begin(
      startLocalWorker({
        secrets: {
          ADMIN_TOKEN: secrets.ADMIN_TOKEN,
          JWT_SECRET: secrets.JWT_SECRET,
          ORDER_ID_KEY: secrets.ORDER_ID_KEY,
          PAYMENT_WEBHOOK_SECRET: secrets.PAYMENT_WEBHOOK_SECRET,
          ORDER_EVENT_SECRETS_KEY: secrets.ORDER_EVENT_SECRETS_KEY,
          UPSTASH_REDIS_REST_URL: gateway.url,
          UPSTASH_REDIS_REST_TOKEN: gateway.token,
          ...(quorum.length > 0 && { LOCK_QUORUM_NODES: JSON.stringify(quorumConfig) }),
        },
        // Two shared cores run workerd, the gateway, Redis and the crowd: allow slow answers.
        // The whole crowd comes from one address here: no per-IP limit, in the isolate or global.
        // Payments through the dev provider's test tokens.
        vars: { REDIS_TIMEOUT_MS: "10000", IP_RATE_LIMIT: "0", ...NO_GLOBAL_IP_LIMITS, PAYMENT_PROVIDER: "dev", ...opts.vars },
        stateDir: opts.stateDir,
        ordersConsumer: opts.ordersConsumer,
        unsettled: opts.unsettled,
        inspectorPort: opts.inspectorPort,
        onLog: opts.onWorkerLog,
        wrapper: opts.wrapper,
      }),
    );
    const api = new ApiClient({ fetch: worker.fetch, adminToken: secrets.ADMIN_TOKEN, jwtSecret: secrets.JWT_SECRET });
    return {
      redis,
      gateway,
      quorum,
      worker,
      secrets,
      api,
      async settledOrders(saleId) {
        const results = await worker.query<{ order_id: string; user_id: string }>(
          "SELECT order_id, user_id FROM orders WHERE sale_id = ?",
          Number(saleId),
        );
        // By the ids the API gave the buyers.
        const ids = orderIdCipher(secrets.ORDER_ID_KEY);
        return results.map((row: { order_id: string; user_id: string }) => ({
          orderId: ids.toPublic(row.order_id),
          userId: row.user_id,
        }));
      },
      drain(saleId, expectSettled) {
        const since = Date.now();
        const redrive = async () => {
          await restartIfQueueStalled(worker, since);
          await worker.scheduled();
        };
        return waitForDrain(api, saleId, expectSettled, DRAIN_BOUND_MS, { redrive, queueLog: worker.queueLog });
      },
      stop,
    };
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
}

/** How long the orders queue may deliver nothing while a drain waits before the local runtime is restarted. */
const QUEUE_STALL_MS = 30_000;

/**
 * Miniflare's local queue delivers one batch at a time, and on a loaded machine it can stop
 * for good after one: busy runs saw a spike's orders wait for minutes after a batch whose
 * consumer had returned (every invocation's start and end logged; the broker's own bookkeeping
 * after a batch, which posts a log line to Node, never finished). Production's Queues run
 * other invocations meanwhile; here the runtime is restarted, and the re-drive sends what the
 * lost queue held, as after a crash.
 */
async function restartIfQueueStalled(worker: LocalWorker, drainSince: number): Promise<void> {
  const idleMs = Date.now() - Math.max(drainSince, worker.ordersDeliveredAt());
  if (idleMs < QUEUE_STALL_MS) return;
  console.warn(
    `the local orders queue delivered nothing for ${Math.round(idleMs / 1000)} s while orders waited: restarting the local runtime`,
  );
  await worker.restart();
}

/**
 * How long a test waits for a drain before calling it stuck: a liveness bound for two cores that
 * other work keeps busy, far above the seconds a drain takes on a quiet machine.
 */
export const DRAIN_BOUND_MS = 120_000;

/** How often `redrive` runs while a drain is awaited: the cron's minute, made shorter for tests. */
const REDRIVE_EVERY_MS = 5_000;

/**
 * Polls the report until the queue has drained this sale (nothing pending, outbox empty).
 * `redrive`, when given, runs first and then every few seconds while waiting: e.g. the Worker's
 * scheduled handler, as the cron trigger would run it (a local stack has no cron, and on a busy
 * machine a message can use up its retries; the outbox re-drive is what settles it then).
 * `queueLog`, when given, is told on a timeout: when the queues last delivered a batch.
 */
export function waitForDrain(
  api: Pick<ApiClient, "report">,
  saleId: string,
  expectSettled: number,
  timeoutMs = DRAIN_BOUND_MS,
  { redrive, queueLog }: { redrive?: () => Promise<void>; queueLog?: () => string[] } = {},
): Promise<ReconciliationReport> {
  let last: ReconciliationReport | undefined;
  let redrivenAt = Number.NEGATIVE_INFINITY;
  return eventually(
    () =>
      `the queue to drain sale ${saleId} (last report: ${JSON.stringify(last)})` +
      (queueLog ? `; the queues' last batches, as of ${new Date().toISOString()}:\n${queueLog().join("\n")}` : ""),
    async () => {
      if (redrive && Date.now() - redrivenAt >= REDRIVE_EVERY_MS) {
        redrivenAt = Date.now();
        await redrive();
      }
      last = await api.report(saleId);
      return last.d1.confirmed + last.d1.failed >= expectSettled && last.pending === 0 && last.redis.outbox === 0 && last;
    },
    timeoutMs,
  );
}
