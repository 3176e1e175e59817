// A whole local stack in one process tree: redis-server, the gateway, the Worker on
// Miniflare. Node-side tests, the load runner and the benchmarks drive it.
import type { ReconciliationReport } from "../../src/settlement/report-shape.ts";
import { type GatewayProcess, spawnGateway } from "../gateway/process.ts";
import { type RedisServer, startRedisServer } from "../redis-server.ts";
import { DEV_SECRETS, mintUserToken } from "../tokens.ts";
import { type LocalWorker, type QueueConsumerOptions, startLocalWorker } from "./worker.ts";

export const SECRETS = { ADMIN_TOKEN: DEV_SECRETS.ADMIN_TOKEN, JWT_SECRET: DEV_SECRETS.JWT_SECRET } as const;
const GATEWAY_TOKEN = DEV_SECRETS.UPSTASH_REDIS_REST_TOKEN;

export interface Stack {
  redis: RedisServer;
  /** Its own process, as in production: the harness and the gateway do not share a thread. */
  gateway: GatewayProcess;
  worker: LocalWorker;
  token(userId: string): Promise<string>;
  createSale(body?: Record<string, unknown>): Promise<{ id: string; stock: number }>;
  checkout(saleId: string, token: string): Promise<{ status: number; body: { orderId?: string; error?: { code: string } } }>;
  report(saleId: string): Promise<Report>;
  /** The orders D1 confirmed for a sale. */
  settledOrders(saleId: string): Promise<{ orderId: string; userId: string }[]>;
  stop(): Promise<void>;
}

/** The body of GET /admin/sales/:id/report. */
export type Report = ReconciliationReport;

export async function startStack(
  opts: {
    vars?: Record<string, string>;
    /** AOF persistence here: a stack started again on the same dir finds Redis' data. */
    redisDataDir?: string;
    /** Local D1 here, kept by stop(): a stack started again on the same dir finds it. */
    stateDir?: string;
    /** Overrides wrangler.toml's consumer settings for the orders queue. */
    ordersConsumer?: QueueConsumerOptions;
    /** Receives the Worker's console output instead of stdout/stderr. */
    onWorkerLog?: (log: { level: string; message: string }) => void;
  } = {},
): Promise<Stack> {
  const redis = await startRedisServer({ dataDir: opts.redisDataDir });
  const gateway = await spawnGateway({ redisUrl: redis.url, token: GATEWAY_TOKEN });
  const worker = await startLocalWorker({
    secrets: { ...SECRETS, UPSTASH_REDIS_REST_URL: gateway.url, UPSTASH_REDIS_REST_TOKEN: GATEWAY_TOKEN },
    // Two shared cores run workerd, the gateway, Redis and the crowd: allow slow answers.
    // The whole crowd comes from one address here: no per-IP limit.
    vars: { REDIS_TIMEOUT_MS: "10000", IP_RATE_LIMIT: "0", ...opts.vars },
    stateDir: opts.stateDir,
    ordersConsumer: opts.ordersConsumer,
    onLog: opts.onWorkerLog,
  });
  const admin = { Authorization: `Bearer ${SECRETS.ADMIN_TOKEN}`, "Content-Type": "application/json" };
  return {
    redis,
    gateway,
    worker,
    token: (userId) => mintUserToken(userId, SECRETS.JWT_SECRET),
    async createSale(body = {}) {
      const res = await worker.fetch("/admin/sales", {
        method: "POST",
        headers: admin,
        body: JSON.stringify({
          name: "node test sale",
          stock: 10,
          startsAt: new Date(Date.now() - 1000).toISOString(),
          endsAt: new Date(Date.now() + 3_600_000).toISOString(),
          admission: { rate: 100_000, burst: 1_000_000 },
          ...body,
        }),
      });
      if (res.status !== 201) throw new Error(`create sale: ${res.status} ${await res.text()}`);
      return (await res.json()) as { id: string; stock: number };
    },
    async checkout(saleId, token) {
      const res = await worker.fetch(`/api/sales/${saleId}/checkout`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}` },
      });
      return { status: res.status, body: (await res.json()) as { orderId?: string; error?: { code: string } } };
    },
    async report(saleId) {
      const res = await worker.fetch(`/admin/sales/${saleId}/report`, { headers: admin });
      if (res.status !== 200) throw new Error(`report: ${res.status} ${await res.text()}`);
      return (await res.json()) as Report;
    },
    async settledOrders(saleId) {
      const db = await worker.mf.getD1Database("DB");
      const { results } = await db
        .prepare("SELECT order_id, user_id FROM orders WHERE sale_id = ?")
        .bind(Number(saleId))
        .all<{ order_id: string; user_id: string }>();
      return results.map((row: { order_id: string; user_id: string }) => ({ orderId: row.order_id, userId: row.user_id }));
    },
    async stop() {
      await worker.stop();
      await gateway.stop();
      await redis.stop();
    },
  };
}

/**
 * Polls the report until the queue has drained this sale (nothing pending, outbox empty).
 * `redrive`, when given, runs before each poll: e.g. the Worker's scheduled handler, as the
 * cron trigger would run it.
 */
export async function waitForDrain(
  stack: Pick<Stack, "report">,
  saleId: string,
  expectConfirmed: number,
  timeoutMs = 60_000,
  { redrive }: { redrive?: () => Promise<void> } = {},
): Promise<Report> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    await redrive?.();
    const r = await stack.report(saleId);
    if (r.d1.confirmed + r.d1.failed >= expectConfirmed && r.pending === 0 && r.redis.outbox === 0) return r;
    if (Date.now() > deadline) throw new Error(`queue did not drain: ${JSON.stringify(r)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}
