// npm run soak [-- --minutes 10] [--base-url http://127.0.0.1:8787 --state-dir .state [--inspector-port 9229]]
//
// A bounded soak of mixed traffic (load/soak/traffic.ts) against a running `npm start` given
// by --base-url (its secrets and processes read from its state directory), or else against a
// local stack it starts itself (dev/stack/: the same Worker bundle in workerd, the gateway,
// redis-server, local D1 and Queues) with IP_RATE_LIMIT=0, so that one machine can play a crowd. Each minute it prints the answers by status, p50/p99, and the RSS and open
// descriptors of workerd, the gateway and redis, and the isolate's JS heap. Then 60 readers of
// one new sale's page for 20 s, and of GET /api/sales.
//
// Fails (exit 1) on any 5xx but 503, on a stack that stops answering, and on memory or
// descriptors that keep growing after the first minute.
import path from "node:path";
import { parseArgs } from "node:util";
import { ApiClient } from "../../dev/lib/api-client.ts";
import { freePort } from "../../dev/lib/net.ts";
import { ROOT } from "../../dev/lib/project.ts";
import { localSecrets } from "../../dev/stack/local-secrets.ts";
import { startStack } from "../../dev/stack/local-stack.ts";
import { StackRecordFile } from "../../dev/stack/stack-record.ts";
import { descendantsNamed, stackProcesses } from "../runner/cpu.ts";
import { fixed, formatTable } from "../runner/table.ts";
import { type ProcessReading, readHeapMb, readProcesses } from "./readings.ts";
import { driveTraffic, readersOf, SOAK_TRAFFIC, Tally } from "./traffic.ts";

const { values: args } = parseArgs({
  options: {
    minutes: { type: "string", default: "10" },
    "base-url": { type: "string" },
    "state-dir": { type: "string", default: path.join(ROOT, ".state") },
    "inspector-port": { type: "string" },
  },
});
const MINUTES = Number(args.minutes);
const MINUTE_MS = 60_000;
const READERS = 60;
const READERS_FOR_MS = 20_000;
/**
 * Growth that is a leak, not warm-up: after the first minute, every minute at or above the
 * one before, and the end above the first minute's reading by this much.
 */
const LEAK = { rssMb: 64, fds: 100, heapMb: 16 };

interface Minute {
  minute: number;
  processes: Record<string, ProcessReading | undefined>;
  heapMb: number | undefined;
}

/** What the soak drives and watches. */
interface Target {
  label: string;
  api: ApiClient;
  /** The stack's processes by role. */
  pids(): Record<string, number[]>;
  /** Where the isolate's heap is read; none: not read (docs/development.md, "Soak"). */
  inspectorPort: number | undefined;
  /** One cron tick, as the platform would fire it. */
  cron(): Promise<Response>;
  stop(): Promise<void>;
}

/**
 * A stack of its own: the local stack (dev/stack/) with the Worker on Miniflare, IP_RATE_LIMIT=0.
 * Not `wrangler dev`: its proxy in front of the Worker leaks (docs/development.md, "Soak").
 */
async function ownStack(): Promise<Target> {
  const inspectorPort = await freePort();
  const stack = await startStack({ inspectorPort, vars: { IP_RATE_LIMIT: "0" }, onWorkerLog: quietWorkerLog });
  return {
    label: "a local stack of its own (Miniflare, the gateway, redis-server)",
    api: stack.api,
    pids: () => {
      const { workerd, gateway, redis } = stackProcesses(stack);
      return { workerd, gateway, redis };
    },
    inspectorPort,
    cron: async () => {
      await stack.worker.scheduled();
      return new Response(null, { status: 200 });
    },
    stop: () => stack.stop(),
  };
}

/** The Worker's warnings (503s under load, declined payments) would flood the table; errors are shown. */
function quietWorkerLog(log: { level: string; message: string }): void {
  if (log.level === "error") console.error(log.message);
}

/** A running `npm start`: its secrets and processes from its state directory. */
function runningStack(baseUrl: string, stateDir: string, inspectorPort: number | undefined): Target {
  const secrets = localSecrets(stateDir);
  const api = new ApiClient({
    fetch: (p, init) => fetch(`${baseUrl}${p}`, init),
    adminToken: secrets.ADMIN_TOKEN,
    jwtSecret: secrets.JWT_SECRET,
  });
  return {
    label: baseUrl,
    api,
    pids: () => {
      const processes = new StackRecordFile(path.join(stateDir, "stack.json")).read()?.processes ?? [];
      const pidOf = (name: string) => processes.filter((p) => p.name === name).map((p) => p.pid);
      return {
        workerd: pidOf("wrangler dev").flatMap((pid) => descendantsNamed(pid, "workerd")),
        gateway: pidOf("gateway"),
        redis: pidOf("redis-server"),
      };
    },
    inspectorPort,
    cron: () => api.fetch("/admin/scheduled", { method: "POST", headers: { Authorization: `Bearer ${secrets.ADMIN_TOKEN}` } }),
    stop: async () => {},
  };
}

const mb = (n: number | undefined) => (n === undefined ? "-" : fixed(n, 0));

function printMinute(row: ReturnType<Tally["take"]>, m: Minute): void {
  const statuses = [...row.statuses].sort(([a], [b]) => a - b);
  const p = m.processes;
  console.log(
    `min ${String(m.minute).padStart(2)} | ${row.requests} req | ${statuses.map(([s, n]) => `${s}:${n}`).join(" ")} | ` +
      `p50 ${fixed(row.p50, 0)} ms p99 ${fixed(row.p99, 0)} ms | ` +
      `workerd ${mb(p.workerd?.rssMb)} MB ${p.workerd?.fds ?? "-"} fds | gateway ${mb(p.gateway?.rssMb)} MB ${p.gateway?.fds ?? "-"} fds | ` +
      `redis ${mb(p.redis?.rssMb)} MB ${p.redis?.fds ?? "-"} fds | heap ${m.heapMb === undefined ? "-" : fixed(m.heapMb, 1)} MB`,
  );
}

/** Readings that rose every minute after the first and ended `by` above it. */
function keptGrowing(series: (number | undefined)[], by: number): boolean {
  const after = series.slice(1).filter((v): v is number => v !== undefined);
  if (after.length < 3) return false;
  const rising = after.every((v, i) => i === 0 || v >= (after[i - 1] as number));
  return rising && (after.at(-1) as number) - (after[0] as number) > by;
}

function leaks(minutes: Minute[]): string[] {
  const found: string[] = [];
  for (const role of ["workerd", "gateway", "redis"]) {
    const readings = minutes.map((m) => m.processes[role]);
    if (
      keptGrowing(
        readings.map((r) => r?.rssMb),
        LEAK.rssMb,
      )
    )
      found.push(`${role}'s memory kept growing`);
    if (
      keptGrowing(
        readings.map((r) => r?.fds),
        LEAK.fds,
      )
    )
      found.push(`${role}'s open descriptors kept growing`);
  }
  if (
    keptGrowing(
      minutes.map((m) => m.heapMb),
      LEAK.heapMb,
    )
  )
    found.push("the isolate's heap kept growing");
  return found;
}

async function answers(api: ApiClient): Promise<boolean> {
  const res = await Promise.race([api.fetch("/healthz"), new Promise<undefined>((r) => setTimeout(r, 15_000).unref())]).catch(
    () => undefined,
  );
  await res?.arrayBuffer();
  return res?.ok === true;
}

async function main(): Promise<number> {
  const target = args["base-url"]
    ? runningStack(
        args["base-url"],
        args["state-dir"] as string,
        args["inspector-port"] ? Number(args["inspector-port"]) : undefined,
      )
    : await ownStack();
  const { api } = target;
  const failures: string[] = [];
  const all = new Map<number, number>();
  const tally = new Tally();
  const minutes: Minute[] = [];
  const read = async (minute: number): Promise<Minute> => {
    const pids = target.pids();
    return {
      minute,
      processes: Object.fromEntries(Object.entries(pids).map(([role, list]) => [role, readProcesses(list)])),
      heapMb: target.inspectorPort === undefined ? undefined : await readHeapMb(target.inspectorPort),
    };
  };
  const account = (row: ReturnType<Tally["take"]>) => {
    for (const [status, n] of row.statuses) all.set(status, (all.get(status) ?? 0) + n);
  };
  try {
    console.log(`Soak: ${MINUTES} min of mixed traffic against ${target.label} (${JSON.stringify(SOAK_TRAFFIC)})`);
    const start = await read(0);
    printMinute(tally.take(), start);
    const traffic = driveTraffic(api, target.cron, tally, SOAK_TRAFFIC, Date.now() + MINUTES * MINUTE_MS);
    for (let minute = 1; minute <= MINUTES; minute++) {
      await new Promise((r) => setTimeout(r, MINUTE_MS));
      if (!(await answers(api))) {
        failures.push(`the stack stopped answering /healthz in minute ${minute}`);
        break;
      }
      const row = tally.take();
      account(row);
      const m = await read(minute);
      minutes.push(m);
      printMinute(row, m);
    }
    await traffic;
    account(tally.take());

    if (failures.length === 0) {
      const sale = await api.createSale({ stock: 100, name: "soak readers" });
      for (const [what, target] of [
        ["a new sale's page", `/api/sales/${sale.id}`],
        ["the catalog", "/api/sales"],
      ] as const) {
        await readersOf(api, tally, target, READERS, READERS_FOR_MS);
        const row = tally.take();
        account(row);
        const statuses = [...row.statuses].map(([s, n]) => `${s}:${n}`).join(" ");
        console.log(
          `${READERS} readers of ${what} for ${READERS_FOR_MS / 1000} s: ${row.requests} req | ${statuses} | p50 ${fixed(row.p50, 0)} ms p99 ${fixed(row.p99, 0)} ms`,
        );
      }
      const end = await read(MINUTES + 1);
      printMinute({ requests: 0, statuses: new Map(), p50: 0, p99: 0 }, end);
    }

    console.log(
      `\nAll answers: ${formatTable([Object.fromEntries([...all].map(([s, n]) => [s === 0 ? "none" : String(s), n]))])}`,
    );
    const serverErrors = [...all].filter(([status]) => status >= 500 && status !== 503).reduce((sum, [, n]) => sum + n, 0);
    if (serverErrors > 0) failures.push(`${serverErrors} answers were 5xx other than 503`);
    if ((all.get(0) ?? 0) > 0) failures.push(`${all.get(0)} requests got no answer at all`);
    failures.push(...leaks(minutes));
  } finally {
    await target.stop();
  }
  for (const failure of failures) console.error(`FAIL: ${failure}`);
  if (failures.length === 0) console.log("Soak passed: no 5xx but 503, the stack answered throughout, nothing kept growing.");
  return failures.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
