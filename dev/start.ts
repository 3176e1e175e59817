// npm start: the whole local stack with a demo sale.
//   redis-server (AOF under .state/redis) -> the Upstash REST gateway (:8079) ->
//   wrangler dev (:8787) with local D1 and Queues persisted under .state/wrangler,
//   plus the cron the Worker would get in production (wrangler dev does not fire crons).
// With UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN set, it uses that database and
// starts no Redis and no gateway. ADMIN_TOKEN and JWT_SECRET override the dev defaults.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { spawnGateway } from "./gateway/process.ts";
import { startRedisServer } from "./redis-server.ts";
import { migrateLocalD1, ROOT, WRANGLER } from "./stack/worker.ts";
import { DEV_SECRETS, mintUserToken } from "./tokens.ts";

const STATE = path.join(ROOT, ".state");
const WORKER_PORT = Number(process.env.WORKER_PORT ?? 8787);
const GATEWAY_PORT = Number(process.env.GATEWAY_PORT ?? 8079);
const REDIS_PORT = Number(process.env.REDIS_PORT ?? 6380);
const CRON_INTERVAL_MS = 60_000;
const wranglerEnv = { ...process.env, WRANGLER_SEND_METRICS: "false", CLOUDFLARE_CF_FETCH_ENABLED: "false" };

const stops: (() => Promise<void>)[] = [];

async function upstash(): Promise<{ url: string; token: string }> {
  const { UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token } = process.env;
  if (url && token) {
    console.log(`Using the Upstash database at ${url}`);
    return { url, token };
  }
  const redis = await startRedisServer({ port: REDIS_PORT, dataDir: path.join(STATE, "redis") });
  stops.push(redis.stop);
  const gatewayToken = DEV_SECRETS.UPSTASH_REDIS_REST_TOKEN;
  const gateway = await spawnGateway({ redisUrl: redis.url, token: gatewayToken, port: GATEWAY_PORT });
  stops.unshift(gateway.stop);
  return { url: gateway.url, token: gatewayToken };
}

function startWranglerDev(devVarsFile: string): ChildProcess {
  migrateLocalD1(path.join(STATE, "wrangler"));
  // Its own process group: wrangler leaves workerd behind when only its own PID is killed.
  const child = spawn(
    WRANGLER,
    [
      "dev",
      "--port",
      String(WORKER_PORT),
      "--ip",
      "127.0.0.1",
      "--persist-to",
      path.join(STATE, "wrangler"),
      "--env-file",
      devVarsFile,
      "--test-scheduled",
      "--log-level",
      "warn",
      "--show-interactive-dev-session=false",
    ],
    { cwd: ROOT, env: wranglerEnv, stdio: ["ignore", "inherit", "inherit"], detached: true },
  );
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid && child.exitCode === null) process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };
  // Last resort when this process ends without a clean shutdown (e.g. its parent exits first).
  process.once("exit", () => killGroup("SIGKILL"));
  stops.unshift(
    () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        killGroup("SIGTERM");
      }),
  );
  return child;
}

async function waitForWorker(base: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error("wrangler dev exited during start-up");
    try {
      if ((await fetch(`${base}/healthz`)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("wrangler dev did not answer within 60 s");
}

/** The demo sale: idempotent per day, so a restart finds the same sale and its orders. */
async function seedDemoSale(base: string, adminToken: string): Promise<{ id: string; remaining: number }> {
  const day = new Date().toISOString().slice(0, 10);
  const res = await fetch(`${base}/admin/sales`, {
    method: "POST",
    headers: { Authorization: `Bearer ${adminToken}`, "Content-Type": "application/json", "Idempotency-Key": `demo-${day}` },
    body: JSON.stringify({
      name: "Demo drop: 100 limited sneakers",
      stock: 100,
      startsAt: `${day}T00:00:00Z`,
      endsAt: new Date(Date.parse(`${day}T00:00:00Z`) + 2 * 86_400_000).toISOString(),
    }),
  });
  if (!res.ok) throw new Error(`seeding the demo sale failed: ${res.status} ${await res.text()}`);
  return (await res.json()) as { id: string; remaining: number };
}

async function main() {
  mkdirSync(STATE, { recursive: true });
  const adminToken = process.env.ADMIN_TOKEN ?? DEV_SECRETS.ADMIN_TOKEN;
  const jwtSecret = process.env.JWT_SECRET ?? DEV_SECRETS.JWT_SECRET;
  const redis = await upstash();

  const devVars = path.join(STATE, "dev.vars");
  writeFileSync(
    devVars,
    [
      `ADMIN_TOKEN=${adminToken}`,
      `JWT_SECRET=${jwtSecret}`,
      `UPSTASH_REDIS_REST_URL=${redis.url}`,
      `UPSTASH_REDIS_REST_TOKEN=${redis.token}`,
    ].join("\n"),
    { mode: 0o600 },
  );
  const base = `http://127.0.0.1:${WORKER_PORT}`;
  const child = startWranglerDev(devVars);
  child.once("exit", (code) => {
    console.error(`wrangler dev exited (${code}); stopping`);
    void shutdown(1);
  });
  await waitForWorker(base, child);

  const cron = setInterval(() => {
    fetch(`${base}/__scheduled?cron=*+*+*+*+*`).catch((err) => console.warn("cron tick failed", err));
  }, CRON_INTERVAL_MS);
  stops.unshift(async () => clearInterval(cron));

  const sale = await seedDemoSale(base, adminToken);
  const token = await mintUserToken("demo-user-1", jwtSecret);
  console.log(`
Flash-sale checkout is running.
  Worker   ${base}
  Redis    ${redis.url} (Upstash REST)
  Demo sale ${sale.id}: ${base}/api/sales/${sale.id}

A user token for demo-user-1 (mint more: npm run token -- <userId>):
  ${token}

Buy:
  curl -s -X POST ${base}/api/sales/${sale.id}/checkout -H 'Authorization: Bearer ${token}'

Ctrl-C stops everything; state survives under .state/.
`);
}

let stopping = false;
async function shutdown(code: number) {
  if (stopping) return;
  stopping = true;
  for (const stop of stops) await stop().catch(() => undefined);
  process.exit(code);
}
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) process.once(signal, () => void shutdown(0));

main().catch(async (err) => {
  console.error(err instanceof Error ? err.message : err);
  await shutdown(1);
});
