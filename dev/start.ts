// npm start: the whole local stack with a demo sale, a demo draw and a demo presale.
//   redis-server (AOF, password) -> the Upstash REST gateway -> wrangler dev with local D1
//   and Queues, plus the cron the Worker would get in production (wrangler dev fires none):
//   POST /admin/scheduled every minute, a route only a Worker with LOOPBACK_HOSTS_ONLY=true has
//   (wrangler's warning that scheduled Workers do not run locally is left out of its output:
//   dev/stack/wrangler-output.ts).
// Once running it prints what a shop owner opens and the admin and buyer tokens, each once;
// the other secrets stay in the state directory's secrets.json.
// Everything lives under the state directory (.state/, or STACK_STATE_DIR): Redis' AOF,
// D1, the random secrets, and stack.json, the record of the processes it runs. A run that
// finds a previous run's processes still running (after a kill -9, a closed terminal, an
// OOM kill) stops them first, and a watchdog stops this run's if it dies the same way.
//
// Environment: WORKER_PORT (8787), GATEWAY_PORT (8079), REDIS_PORT (6380), BEACON_PORT (8078), INSPECTOR_PORT
// (wrangler's inspector of the Worker, on a port of its choosing unless set; npm run soak reads the isolate's heap there); ADMIN_TOKEN and
// JWT_SECRET override the stored secrets; DEV_LOGIN is on (the storefront's local sign-in);
// any of the Worker's [vars] (IP_RATE_LIMIT=0 ...) overrides wrangler.toml; with UPSTASH_REDIS_REST_URL and UPSTASH_REDIS_REST_TOKEN set it
// uses that database and starts no Redis and no gateway; LOCK_QUORUM_NODES is passed on. The
// gateway enforces the Worker's REDIS_MAX_RECORD_BYTES and REDIS_MAX_REQUEST_BYTES, as Upstash would.
// --webhook-url <url> registers an endpoint for every order event (http allowed for loopback
// here) and leaves its secret for npm run webhook-receiver in the state directory.
// Turnstile: the Worker cannot reach Cloudflare's siteverify from here, so this process runs the
// local stand-in (dev/turnstile/siteverify.ts) and points TURNSTILE_VERIFY_URL at it, with
// Cloudflare's always-passing test secret and test site key (TURNSTILE_* in the environment override them).
// Draws: a beacon can no more be reached from here than siteverify, so this process serves the
// local stand-in for one (dev/stack/local-beacon.ts, on BEACON_PORT) that the demo draw names.
// Presale lanes: the demo presale's members' lane is open for about ten minutes from the start
// (dev/stack/demo-presale.ts); each run makes codes for it and prints one.
// Exposure: everything listens on 127.0.0.1; the Worker (LOOPBACK_HOSTS_ONLY) and the gateway
// answer loopback Host names only, so a page whose DNS name is rebound to 127.0.0.1 cannot
// drive them; the gateway refuses administrative commands (inside scripts too); Redis wants
// its random password; the cron is fired through the Worker's token-guarded route.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import type { SaleView } from "../src/shared/api-types.ts";
import { ORDER_EVENT_TYPES } from "../src/shared/order-events.ts";
import { startAnalyticsStandIn } from "./analytics/stand-in.ts";
import { spawnGateway } from "./gateway/process.ts";
import { ApiClient } from "./lib/api-client.ts";
import { offlineWranglerEnv, ROOT, WRANGLER } from "./lib/project.ts";
import { startRedisServer } from "./lib/redis-server.ts";
import { webhookSecretFile } from "./lib/webhook-secret-file.ts";
import { demoDraw } from "./stack/demo-draw.ts";
import { type DemoPresale, demoPresale } from "./stack/demo-presale.ts";
import { localBeacon } from "./stack/local-beacon.ts";
import { localSecrets, stateDir } from "./stack/local-secrets.ts";
import { portOwner } from "./stack/port-owner.ts";
import { type RecordedProcess, StackRecordFile, stopProcesses } from "./stack/stack-record.ts";
import { workerLogFile } from "./stack/worker-log.ts";
import { prepareLocalD1, workerConfig } from "./stack/wrangler-cache.ts";
import { withoutCronWarning } from "./stack/wrangler-output.ts";
import { startSiteverify } from "./turnstile/siteverify.ts";
import { TEST_SECRETS as TURNSTILE_TEST_SECRETS, TEST_SITE_KEY as TURNSTILE_TEST_SITE_KEY } from "./turnstile/test-keys.ts";

/** --webhook-url <url>: an endpoint for every order event (e.g. npm run webhook-receiver's). */
const { values: args } = parseArgs({ options: { "webhook-url": { type: "string" } } });

const STATE = stateDir(ROOT);
const WORKER_PORT = Number(process.env.WORKER_PORT ?? 8787);
const GATEWAY_PORT = Number(process.env.GATEWAY_PORT ?? 8079);
const REDIS_PORT = Number(process.env.REDIS_PORT ?? 6380);
/** Fixed, unlike siteverify's: a draw sale keeps its beacon's URL across restarts. */
const BEACON_PORT = Number(process.env.BEACON_PORT ?? 8078);
/** Only when asked for: wrangler's default finds a free port, so two stacks can run side by side. */
const INSPECTOR_PORT = process.env.INSPECTOR_PORT;
const CRON_INTERVAL_MS = 60_000;
/** The demo drop's sizes (EU) and pairs of each: few at the ends, more in the middle. */
const DEMO_SIZES: [number, number][] = [
  [38, 4],
  [39, 8],
  [40, 12],
  [41, 16],
  [42, 20],
  [43, 16],
  [44, 12],
  [45, 8],
  [46, 4],
];
const WATCHDOG = fileURLToPath(new URL("./stack/watchdog.ts", import.meta.url));

const record = new StackRecordFile(path.join(STATE, "stack.json"));
const stops: (() => Promise<void>)[] = [];
/** Set once this run owns the record: a run that refused to start leaves it alone. */
let recording = false;

/** Refuses to start over something else: names who holds a port this stack needs. */
function assertPortsFree(ports: [string, number][]): void {
  for (const [what, port] of ports) {
    const owner = portOwner(port);
    if (owner) {
      throw new Error(
        `port ${port} (${what}) is taken by PID ${owner.pid} (${owner.command || "unknown"}); stop it or set ${what}=<another port>`,
      );
    }
  }
}

/**
 * What the local stack changes in wrangler.toml's [vars] unless the environment does:
 * payments through the dev provider's test tokens, the storefront's sign-in box, and the
 * Worker answering loopback Host names only (against DNS rebinding), Turnstile's test site key.
 */
const LOCAL_VARS: Record<string, string> = {
  PAYMENT_PROVIDER: "dev",
  DEV_LOGIN: "true",
  LOOPBACK_HOSTS_ONLY: "true",
  TURNSTILE_SITE_KEY: TURNSTILE_TEST_SITE_KEY,
};

/** LOCAL_VARS, `stackVars` and the Worker's [vars] that the environment overrides, as wrangler dev --var flags. */
function varOverrides(stackVars: Record<string, string>): { flags: string[]; names: string[] } {
  const vars = Object.keys(workerConfig().vars);
  const names = vars.filter((name) => process.env[name] !== undefined);
  const values = { ...LOCAL_VARS, ...stackVars, ...Object.fromEntries(names.map((name) => [name, process.env[name] as string])) };
  return { flags: Object.entries(values).flatMap(([name, value]) => ["--var", `${name}:${value}`]), names };
}

/** One of the Worker's [vars] as this stack runs it: the environment's value, else wrangler.toml's. */
function workerSetting(name: string): string {
  const value = process.env[name] ?? workerConfig().vars[name];
  if (value === undefined) throw new Error(`${name} is not in wrangler.toml's [vars]`);
  return value;
}

function startWatchdog(): void {
  const child = spawn(process.execPath, ["--import", "tsx", WATCHDOG, String(process.pid), record.file], {
    cwd: ROOT,
    detached: true,
    stdio: "ignore",
  });
  child.unref();
  record.add({ name: "watchdog", pid: child.pid as number, group: false, marker: "watchdog.ts" });
}

async function upstash(secrets: ReturnType<typeof localSecrets>): Promise<{ url: string; token: string }> {
  const { UPSTASH_REDIS_REST_URL: url, UPSTASH_REDIS_REST_TOKEN: token } = process.env;
  if (url && token) {
    console.log(`Using the Upstash database at ${url}`);
    return { url, token };
  }
  const redis = await startRedisServer({
    port: REDIS_PORT,
    dataDir: path.join(STATE, "redis"),
    password: secrets.REDIS_PASSWORD,
  });
  record.add({ name: "redis-server", pid: redis.pid, group: false, marker: "redis-server" });
  stops.push(redis.stop);
  const gateway = await spawnGateway({
    redisUrl: redis.url,
    token: secrets.GATEWAY_TOKEN,
    port: GATEWAY_PORT,
    maxRecordBytes: Number(workerSetting("REDIS_MAX_RECORD_BYTES")),
    maxRequestBytes: Number(workerSetting("REDIS_MAX_REQUEST_BYTES")),
  });
  record.add({ name: "gateway", pid: gateway.pid, group: false, marker: "gateway" });
  stops.unshift(gateway.stop);
  return { url: gateway.url, token: gateway.token };
}

function startWranglerDev(devVarsFile: string, varFlags: string[]): ChildProcess {
  prepareLocalD1(path.join(STATE, "wrangler"));
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
      ...varFlags,
      ...(INSPECTOR_PORT ? ["--inspector-port", INSPECTOR_PORT] : []),
      "--log-level",
      "warn",
      "--show-interactive-dev-session=false",
    ],
    {
      cwd: ROOT,
      // Its output comes through a pipe (withoutCronWarning): colours as on a terminal where there is one.
      // Wrangler writes every line of its log, the Worker's included whatever --log-level prints,
      // to its debug log: kept in the state directory for npm run trace.
      env: offlineWranglerEnv({ WRANGLER_LOG_PATH: workerLogFile(STATE), ...(process.stdout.isTTY && { FORCE_COLOR: "1" }) }),
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    },
  );
  child.stdout?.pipe(withoutCronWarning()).pipe(process.stdout);
  child.stderr?.pipe(withoutCronWarning()).pipe(process.stderr);
  const wrangler: RecordedProcess = { name: "wrangler dev", pid: child.pid as number, group: true, marker: "wrangler" };
  record.add(wrangler);
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

/** Waits for this run's wrangler dev to answer; the port was free when it started, so what answers is ours. */
async function waitForWorker(base: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error("wrangler dev exited during start-up");
    try {
      if ((await fetch(`${base}/healthz`)).ok && child.exitCode === null) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("wrangler dev did not answer within 60 s");
}

async function main() {
  mkdirSync(STATE, { recursive: true });
  const stopped = await record.stopLeftovers();
  if (stopped.length > 0) console.log(`Stopped what a previous npm start left running: ${stopped.join(", ")}`);
  const external = Boolean(process.env.UPSTASH_REDIS_REST_URL && process.env.UPSTASH_REDIS_REST_TOKEN);
  assertPortsFree([
    ["WORKER_PORT", WORKER_PORT],
    ["BEACON_PORT", BEACON_PORT],
    ...(external
      ? []
      : ([
          ["GATEWAY_PORT", GATEWAY_PORT],
          ["REDIS_PORT", REDIS_PORT],
        ] as [string, number][])),
  ]);
  record.begin({ name: "npm start", pid: process.pid, group: false, marker: "start.ts" });
  recording = true;
  startWatchdog();

  const secrets = localSecrets(STATE);
  const redis = await upstash(secrets);
  const siteverify = await startSiteverify();
  stops.push(() => siteverify.stop());
  const beacon = await localBeacon(STATE, BEACON_PORT);
  stops.push(() => beacon.stop());
  // The funnel's data points: the local runtime's Analytics Engine binding keeps none.
  const analytics = await startAnalyticsStandIn({ file: path.join(STATE, "analytics.jsonl") });
  stops.push(() => analytics.stop());
  const devVars = path.join(STATE, "dev.vars");
  writeFileSync(
    devVars,
    [
      `ADMIN_TOKEN=${secrets.ADMIN_TOKEN}`,
      `JWT_SECRET=${secrets.JWT_SECRET}`,
      `ORDER_ID_KEY=${secrets.ORDER_ID_KEY}`,
      `UPSTASH_REDIS_REST_URL=${redis.url}`,
      `UPSTASH_REDIS_REST_TOKEN=${redis.token}`,
      `PAYMENT_WEBHOOK_SECRET=${secrets.PAYMENT_WEBHOOK_SECRET}`,
      `ORDER_EVENT_SECRETS_KEY=${secrets.ORDER_EVENT_SECRETS_KEY}`,
      `TURNSTILE_SECRET_KEY=${process.env.TURNSTILE_SECRET_KEY ?? TURNSTILE_TEST_SECRETS.passes}`,
      // The lab's redlock strategy, when its databases are given (single quotes: the value is JSON).
      ...(process.env.LOCK_QUORUM_NODES ? [`LOCK_QUORUM_NODES='${process.env.LOCK_QUORUM_NODES}'`] : []),
    ].join("\n"),
    { mode: 0o600 },
  );
  const overrides = varOverrides({ TURNSTILE_VERIFY_URL: siteverify.url, ANALYTICS_STAND_IN_URL: analytics.url });
  const base = `http://127.0.0.1:${WORKER_PORT}`;
  const child = startWranglerDev(devVars, overrides.flags);
  child.once("exit", (code) => {
    console.error(`wrangler dev exited (${code}); stopping`);
    void shutdown(1);
  });
  await waitForWorker(base, child);

  // The demo sale is idempotent per day, so a restart finds the same sale and its orders. It
  // is a sneaker drop in sizes, each with its own few pairs (the largest sizes dearer), one pair
  // per buyer across them, with a price and a ten-minute payment window: the storefront shows
  // the size picker and the whole order life (pay with the dev provider's test tokens, cancel,
  // or let it expire).
  const api = new ApiClient({
    fetch: (p, init) => fetch(`${base}${p}`, init),
    adminToken: secrets.ADMIN_TOKEN,
    jwtSecret: secrets.JWT_SECRET,
  });
  // The cron, through the Worker's own route (admin token, loopback Host): wrangler dev's
  // --test-scheduled trigger would answer GET /__scheduled before the Worker, for any Host.
  const cron = setInterval(() => {
    api.runScheduled().then(
      (answer) => answer.status !== 204 && console.warn(`cron tick answered ${answer.status} ${answer.code ?? ""}`),
      (err) => console.warn("cron tick failed", err),
    );
  }, CRON_INTERVAL_MS);
  stops.unshift(async () => clearInterval(cron));

  const day = new Date().toISOString().slice(0, 10);
  const sale = await api.createSale(
    {
      name: "Demo drop: limited sneakers in sizes EU 38 to 46",
      description: "One pair per buyer, in any size. Pay within ten minutes, or the pair goes back on sale.",
      variants: DEMO_SIZES.map(([size, stock]) => ({
        id: `eu-${size}`,
        label: `EU ${size}`,
        stock,
        ...(size >= 45 && { price: 13_900 }),
      })),
      price: 12_900,
      currency: "EUR",
      paymentWindowSec: 600,
      startsAt: `${day}T00:00:00Z`,
      endsAt: new Date(Date.parse(`${day}T00:00:00Z`) + 2 * 86_400_000).toISOString(),
      admission: undefined, // the product's default admission, not the client's test default
    },
    { idempotencyKey: `demo-drop-${day}` },
  );
  const draw = await demoDraw(api, beacon);
  const presale = await demoPresale(api);
  const token = await api.userToken("demo-user-1");
  const endpoint = args["webhook-url"] ? await localEndpoint(api, args["webhook-url"]) : undefined;
  console.log(
    startedMessage({
      base,
      saleId: sale.id,
      draw,
      presale,
      adminToken: secrets.ADMIN_TOKEN,
      buyer: { userId: "demo-user-1", token },
      store: external
        ? `the Upstash database at ${redis.url}`
        : `redis-server behind the local Upstash REST gateway, ${redis.url}`,
      endpoint,
      envVars: overrides.names,
    }),
  );
}

/**
 * What npm start says once the stack runs: first what a shop owner opens (the storefront, the
 * console, the API reference) and the two tokens they need, each printed once; then what a
 * developer looks for. The other secrets stay in the file it names.
 */
function startedMessage(run: {
  base: string;
  saleId: string;
  draw: SaleView;
  presale: DemoPresale;
  adminToken: string;
  buyer: { userId: string; token: string };
  store: string;
  endpoint: { url: string; id: string } | undefined;
  envVars: string[];
}): string {
  const { base, saleId, draw, presale } = run;
  const relative = (file: string) => path.relative(ROOT, file) || file;
  const clock = (iso: string) => new Date(iso).toLocaleTimeString([], { hour: "numeric", minute: "2-digit" });
  const closes = clock(draw.draw?.closesAt ?? draw.startsAt);
  const everyone = clock(presale.sale.startsAt);
  return `
Flash-sale checkout is running.

  Storefront   ${base}/?sale=${saleId}
               the demo sale, sneakers in sizes: sign in with any name and buy
  A draw       ${base}/?sale=${draw.id}
               enter before ${closes}: winners are drawn at random at the close, then pay
  A presale    ${base}/?sale=${presale.sale.id}
               members buy first with the code below, everyone from ${everyone}
  Console      ${base}/admin/
               create and watch sales: unlock it with the admin token below
  API docs     ${base}/docs

  Admin token  ${run.adminToken}
  Members' code  ${presale.code} (lane open until ${everyone})
  Buyer token  for ${run.buyer.userId}, valid for an hour (npm run token -- <name> makes more):
               TOKEN=${run.buyer.token}

Unpaid orders expire on time: npm start runs the Worker's every-minute jobs itself
(wrangler dev would not), so an order not paid within its window goes back on sale, and a
draw is drawn within a minute of its close.

For developers
  Demo sale    ${saleId}: ${base}/api/sales/${saleId} (OpenAPI 3.1: ${base}/openapi.json)
  Demo draw    ${draw.id}: ${base}/api/sales/${draw.id}/draw; once drawn, npm run verify-draw -- ${draw.id} --url ${base}
  Demo presale ${presale.sale.id}: each start makes a batch of ${presale.lane} codes; all of them, and their counts, in ${base}/admin/#lanes
  Stock store  ${run.store}
  Secrets      this stack's others (JWT, order ids, gateway, Redis, payment webhook, order events' key) are in ${relative(path.join(STATE, "secrets.json"))}; local use only${
    run.endpoint
      ? `
  Events       ${run.endpoint.url} (${run.endpoint.id}; secret in ${relative(webhookSecretFile(STATE))})`
      : ""
  }${
    run.envVars.length > 0
      ? `
  Vars from the environment: ${run.envVars.join(", ")}`
      : ""
  }
  Buy from a terminal, once the TOKEN= line above has run in it:
    curl -s -X POST ${base}/api/sales/${saleId}/checkout -H "Authorization: Bearer $TOKEN" \\
      -H 'Content-Type: application/json' -d '{"variant": "eu-42"}'

Ctrl-C stops everything; state and secrets survive under ${relative(STATE)}/.
`;
}

/**
 * The endpoint for `url`, registered once for every event type; a restart gives it a new
 * secret (secrets are shown once), written where npm run webhook-receiver reads it.
 */
async function localEndpoint(api: ApiClient, url: string) {
  const known = (await api.endpoints()).find((e) => e.url === url);
  const endpoint = known ? await api.rotateEndpointSecret(known.id) : await api.addEndpoint(url, ORDER_EVENT_TYPES);
  writeFileSync(webhookSecretFile(STATE), endpoint.secret as string, { mode: 0o600 });
  return endpoint;
}

let stopping = false;
async function shutdown(code: number) {
  if (stopping) return;
  stopping = true;
  for (const stop of stops) await stop().catch(() => undefined);
  if (recording) {
    // The watchdog would notice the record gone within half a second; a clean stop ends it now.
    await stopProcesses(record.read()?.processes.filter((p) => p.name === "watchdog") ?? []);
    record.clear();
  }
  process.exit(code);
}
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  // wrangler's module (imported for its config reader) exits the process on these signals
  // before any other handler runs, leaving the stack to the watchdog: this run stops it itself.
  process.removeAllListeners(signal);
  process.once(signal, () => void shutdown(0));
}

main().catch(async (err) => {
  console.error(err instanceof Error ? err.message : err);
  await shutdown(1);
});
