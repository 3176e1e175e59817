// npm run load -- [options]: a flash-sale crowd against the local stack (the Worker on
// Miniflare with redis-server, the Upstash gateway, local D1 and Queues), or against a
// running Worker with --base-url. Prints a summary table (or one JSON line with --json),
// writes a JSON and an HTML report, checks the invariants after the settlement queue has
// drained, and exits 1 on any violation.
//
//   --strategy checkout|naive|lock|redlock|optimistic|atomic|durable-object|durable-object-merged|design-card|all   what to drive
//              (default checkout, the real route; all = the lab's strategies; a comma-separated
//              list also works; redlock starts three more redis-server + gateway pairs for its quorum)
//   --users 2000 --attempts 2 --stock 300                  the crowd: each user tries `attempts`
//              times back to back; every strategy gets the same crowd
//   --concurrency 500 | --rate <arrivals/s>                closed loop (default) or open loop
//   --base-url <url> --admin-token <t> --jwt-secret <s>     a running Worker (tokens also from
//              ADMIN_TOKEN / JWT_SECRET); the lab needs LAB_ENABLED=true there
//   --out load/reports   --drain-timeout <s>   --json
//   --scenario queue   a waiting-room drop instead (local stack only; load/waiting-room.js is the same
//              drop for k6): --users buyers join a fifo sale's pre-queue, a tenth of them bots
//              that hammer checkout without a pass, with passes copied from other accounts and
//              replayed; --admit places let in per second. Exits 1 unless every unit went to a
//              holder of their own pass, no bot got one, and the places let in are one run from 1.
//   --scenario million   a million joiners at once, rehearsed (load/runner/waiting-room-million.ts):
//              --users joiners (default 1,000,000) in a fifo sale's pre-queue, --sample of them
//              (default 1,000, spread over the line) joining, polling and buying through the Worker, the rest joined
//              straight into Redis with the Worker's script; --stock, --admit (default 500). Prints
//              joins, polls and Redis commands a second and the largest record (npm run model
//              extrapolates them); exits 1 on any violation of the sale's or the line's rules.
//   --scenario drop    a drop rehearsal (local stack only): --users people and --bots bots (default a
//              tenth of --users) join a fifo sale of --stock units before the start; --no-show of the
//              people let in never buy (default 0.4), the rest take 2 to 8 s; each gives up after
//              --patience seconds (a range, default 60-240) without their turn; bots buy the moment
//              their turn comes and hammer checkout without a pass of their own meanwhile; --admit
//              (default 20), --pass-ttl (default 120 s), --grace the no-show grace (default 30 s).
//              Prints the sell-out time, the units that reached people, the no-show share, places
//              let in per second over time and the wait estimate's error; exits 1 on any violation.
import path from "node:path";
import { parseArgs } from "node:util";
import { Redis as IORedis } from "ioredis";
import { ROOT } from "../../dev/lib/project.ts";
import { mergedHash } from "../../dev/lib/sale-buckets.ts";
import { type Stack, startStack, waitForDrain } from "../../dev/stack/local-stack.ts";
import { STRATEGIES as LAB_STRATEGIES } from "../../src/shared/lab-strategies.ts";
import type { Pace } from "./crowd.ts";
import { dropSummary, runDrop } from "./drop.ts";
import { saleViolations } from "./invariants.ts";
import { progressLine } from "./progress.ts";
import { writeReports } from "./report-files.ts";
import { type RunStrategy, runLoad, runSummary } from "./run.ts";
import { fixed, formatTable, seconds } from "./table.ts";
import { remoteTarget, stackTarget, type Target } from "./target.ts";
import { acceptedSamples, queueViolations, runQueueCrowd } from "./waiting-room-crowd.ts";
import { millionReport, rehearseMillion } from "./waiting-room-million.ts";

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}

const { values } = (() => {
  try {
    return parseArgs({
      options: {
        strategy: { type: "string", default: "checkout" },
        users: { type: "string", default: "2000" },
        attempts: { type: "string", default: "2" },
        stock: { type: "string", default: "300" },
        concurrency: { type: "string", default: "500" },
        rate: { type: "string" },
        "base-url": { type: "string" },
        "admin-token": { type: "string", default: process.env.ADMIN_TOKEN },
        "jwt-secret": { type: "string", default: process.env.JWT_SECRET },
        out: { type: "string", default: path.join(ROOT, "load", "reports") },
        "drain-timeout": { type: "string", default: "60" },
        json: { type: "boolean", default: false },
        scenario: { type: "string", default: "crowd" },
        admit: { type: "string" },
        bots: { type: "string" },
        "no-show": { type: "string", default: "0.4" },
        patience: { type: "string", default: "60-240" },
        "pass-ttl": { type: "string", default: "120" },
        grace: { type: "string", default: "30" },
        sample: { type: "string", default: "1000" },
      },
    });
  } catch (err) {
    return fail((err as Error).message);
  }
})();

function positive(name: string, value: string | undefined): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) fail(`--${name} must be a positive integer`);
  return n;
}

function strategies(value: string): RunStrategy[] {
  const known: RunStrategy[] = ["checkout", ...LAB_STRATEGIES];
  const picked = value.split(",").flatMap((s) => (s === "all" ? [...LAB_STRATEGIES] : [s]));
  for (const s of picked) if (!(known as string[]).includes(s)) fail(`unknown strategy ${s}; use ${known.join("|")}|all`);
  return [...new Set(picked)] as RunStrategy[];
}

const pace: Pace = values.rate
  ? { ratePerSec: positive("rate", values.rate) }
  : { concurrency: positive("concurrency", values.concurrency) };
const options = {
  strategies: strategies(values.strategy),
  users: positive("users", values.users),
  attempts: positive("attempts", values.attempts),
  stock: positive("stock", values.stock),
  pace,
  drainTimeoutMs: positive("drain-timeout", values["drain-timeout"]) * 1000,
};

if (values.scenario === "queue") {
  if (values["base-url"])
    fail("--scenario queue runs on the local stack; against a deployment, run load/waiting-room.js with k6");
  const users = positive("users", values.users);
  const stock = positive("stock", values.stock);
  if (!values.json) console.error("starting the local stack (redis-server, gateway, Worker on Miniflare)...");
  const queueStack = await startStack({ vars: { USER_RATE_LIMIT: "0" } });
  try {
    const bots = Math.floor(users / 10);
    const started = performance.now();
    const result = await runQueueCrowd(queueStack.api, {
      people: users - bots,
      bots,
      stock,
      admitPerSec: positive("admit", values.admit ?? "100"),
      patienceMs: positive("drain-timeout", values["drain-timeout"]) * 1000,
    });
    const redis = new IORedis(queueStack.redis.url);
    const passes = await mergedHash(redis, result.saleId, "passes");
    redis.disconnect();
    const report = await waitForDrain(queueStack.api, result.saleId, result.accepted.size, options.drainTimeoutMs);
    const samples = acceptedSamples(result.accepted);
    const violations = [
      ...queueViolations({ accepted: result.accepted, botAccepted: result.botAccepted, passes }),
      ...saleViolations({ stock, samples, report, settled: await queueStack.settledOrders(result.saleId) }),
      ...[...result.failures].map(([code, n]) => `${n} requests failed with ${code}`),
    ];
    const summary = {
      scenario: "queue",
      buyers: users,
      bots,
      stock,
      accepted: result.accepted.size,
      botAccepted: result.botAccepted,
      botRefusals: Object.fromEntries(result.botRefusals),
      admitted: Object.keys(passes).length,
      seconds: Math.round((performance.now() - started) / 1000),
      violations,
    };
    if (values.json) console.log(JSON.stringify(summary));
    else {
      console.log(formatTable([{ ...summary, botRefusals: JSON.stringify(summary.botRefusals), violations: violations.length }]));
      for (const v of violations) console.log(`VIOLATION queue: ${v}`);
    }
    process.exitCode = violations.length > 0 ? 1 : 0;
  } finally {
    await queueStack.stop();
  }
  process.exit();
}

if (values.scenario === "million") {
  if (values["base-url"])
    fail("--scenario million runs on the local stack; against a deployment, run load/waiting-room.js with k6");
  const joiners = process.argv.some((a) => a.startsWith("--users")) ? positive("users", values.users) : 1_000_000;
  const sampled = positive("sample", values.sample);
  if (sampled > joiners) fail("--sample must be at most --users");
  if (!values.json) console.error("starting the local stack (redis-server, gateway, Worker on Miniflare)...");
  const millionStack = await startStack({ vars: { USER_RATE_LIMIT: "0" } });
  try {
    const figures = await rehearseMillion(millionStack, {
      joiners,
      sampled,
      stock: positive("stock", values.stock),
      admitPerSec: positive("admit", values.admit ?? "500"),
      progress: values.json ? undefined : (label) => console.error(`${label}...`),
    });
    if (values.json) console.log(JSON.stringify({ scenario: "million", ...figures }));
    else console.log(millionReport(figures));
    process.exitCode = figures.violations.length > 0 ? 1 : 0;
  } finally {
    await millionStack.stop();
  }
  process.exit();
}

if (values.scenario === "drop") {
  if (values["base-url"]) fail("--scenario drop runs on the local stack");
  const people = positive("users", values.users);
  const noShowShare = Number(values["no-show"]);
  if (!(noShowShare >= 0 && noShowShare <= 1)) fail("--no-show must be a share from 0 to 1");
  const patience = /^(\d+)-(\d+)$/.exec(values.patience ?? "");
  if (!patience) fail("--patience must be a range of seconds such as 60-240");
  if (!values.json) console.error("starting the local stack (redis-server, gateway, Worker on Miniflare)...");
  const grace = positive("grace", values.grace);
  const dropStack = await startStack({ vars: { USER_RATE_LIMIT: "0", QUEUE_NO_SHOW_GRACE_SEC: String(grace) } });
  try {
    const drop = {
      people,
      bots: values.bots === undefined ? Math.floor(people / 10) : Number(values.bots),
      stock: positive("stock", values.stock),
      noShowShare,
      patienceMs: [Number(patience[1]) * 1000, Number(patience[2]) * 1000] as [number, number],
      thinkMs: [2_000, 8_000] as [number, number],
      admitPerSec: positive("admit", values.admit ?? "20"),
      passTtlSec: positive("pass-ttl", values["pass-ttl"]),
    };
    const result = await runDrop(dropStack.api, drop);
    const report = await waitForDrain(dropStack.api, result.saleId, result.accepted.size, options.drainTimeoutMs);
    const redis = new IORedis(dropStack.redis.url);
    const passes = await mergedHash(redis, result.saleId, "passes");
    redis.disconnect();
    const violations = [
      ...queueViolations({ accepted: result.accepted, botAccepted: result.botPassAbuses, passes }),
      ...saleViolations({
        stock: drop.stock,
        samples: acceptedSamples(result.accepted),
        report,
        settled: await dropStack.settledOrders(result.saleId),
      }),
      ...[...result.failures].map(([code, n]) => `${n} requests failed with ${code}`),
    ];
    const summary = dropSummary(drop, grace, result);
    if (values.json) console.log(JSON.stringify({ ...summary, violations }));
    else {
      console.log(`\ndrop rehearsal: ${people} people and ${drop.bots} bots for ${drop.stock} units\n`);
      console.log(formatTable([summary.figures]));
      console.log(`\nplaces let in per second, ${result.admissionBinSec} s at a time from the start:`);
      console.log(summary.admissionRates.map((r) => r.toFixed(1)).join(" "));
      for (const v of violations) console.log(`VIOLATION drop: ${v}`);
    }
    process.exitCode = violations.length > 0 ? 1 : 0;
  } finally {
    await dropStack.stop();
  }
  process.exit();
}

let stack: Stack | undefined;
let target: Target;
if (values["base-url"]) {
  const adminToken = values["admin-token"];
  const jwtSecret = values["jwt-secret"];
  if (!adminToken || !jwtSecret) fail("--base-url needs --admin-token and --jwt-secret (or ADMIN_TOKEN and JWT_SECRET)");
  target = remoteTarget(values["base-url"], adminToken, jwtSecret);
} else {
  if (!values.json) console.error("starting the local stack (redis-server, gateway, Worker on Miniflare)...");
  // The redlock strategy locks on three more independent databases.
  const quorumNodes = options.strategies.includes("redlock") ? 3 : 0;
  stack = await startStack({ vars: { LAB_ENABLED: "true" }, quorumNodes });
  target = stackTarget(stack);
}

try {
  const startedAt = new Date().toISOString();
  const runs = await runLoad(target, { ...options, progress: values.json ? undefined : progressLine });
  const files = writeReports(values.out, { startedAt, target: target.name, options, runs });
  const summaries = runs.map(runSummary);
  const violations = summaries.reduce((n, s) => n + s.violations.length, 0);
  if (values.json) {
    console.log(JSON.stringify({ startedAt, target: target.name, options, runs: summaries, violations, reports: files }));
  } else {
    const count = (outcomes: Record<string, number>, ...codes: string[]) =>
      codes.reduce((n, code) => n + (outcomes[code] ?? 0), 0);
    const rows = summaries.map((s) => ({
      strategy: s.strategy,
      requests: s.requests,
      accepted: s.accepted,
      "sold out": count(s.outcomes, "SOLD_OUT"),
      "already bought": count(s.outcomes, "ALREADY_PURCHASED"),
      "turned away": count(s.outcomes, "BUSY", "RATE_LIMITED"),
      other: s.requests - count(s.outcomes, "ACCEPTED", "SOLD_OUT", "ALREADY_PURCHASED", "BUSY", "RATE_LIMITED"),
      "sell-out s": seconds(s.sellOutMs),
      "accepted/s": fixed(s.acceptedPerSec),
      "resp/s": fixed(s.reqPerSec, 0),
      "p50 ms": fixed(s.latencyMs.p50),
      "p99 ms": fixed(s.latencyMs.p99),
      oversold: s.oversold,
      duplicates: s.duplicates,
      violations: s.violations.length,
    }));
    console.log(
      `\n${target.name}: ${options.users} users x ${options.attempts} attempts, stock ${options.stock}, ${"concurrency" in pace ? `concurrency ${pace.concurrency}` : `${pace.ratePerSec} arrivals/s`}\n`,
    );
    console.log(formatTable(rows));
    for (const s of summaries) for (const v of s.violations) console.log(`VIOLATION ${s.strategy}: ${v}`);
    console.log(`\nreport: ${files.html}\n        ${files.json}`);
  }
  process.exitCode = violations > 0 ? 1 : 0;
} finally {
  await stack?.stop();
}
