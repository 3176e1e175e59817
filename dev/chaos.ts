// npm run chaos: each outage of dev/stack/outages.ts for two minutes (CHAOS_DOWN_MS to change
// it) on a fresh local stack, with a crowd buying through it and the cron running every few
// seconds; prints each scenario's outcome and exits non-zero if any broke an invariant.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startStack } from "./stack/local-stack.ts";
import { type OutageKind, runOutage } from "./stack/outages.ts";

const downMs = Number(process.env.CHAOS_DOWN_MS ?? 120_000);
const scenarios: [OutageKind, string][] = [
  ["redis", "Redis unreachable mid-sale"],
  ["d1", "D1 unreachable while orders settle; the queue consumer fails every delivery meanwhile"],
];

const base = mkdtempSync(path.join(tmpdir(), "flash-chaos-"));
const stateDir = path.join(base, "state");
const stack = await startStack({
  redisDataDir: path.join(base, "redis"),
  stateDir,
  vars: { REDIS_TIMEOUT_MS: "2000", OUTBOX_REDRIVE_AFTER_MS: "5000" },
  onWorkerLog: () => {},
});
let failures = 0;
try {
  for (const [kind, what] of scenarios) {
    console.log(`${kind}: ${what}, ${Math.round(downMs / 1000)} s ...`);
    const o = await runOutage(stack, kind, { downMs, stateDir, cronEveryMs: 5_000, settleTimeoutMs: downMs + 180_000 });
    const verdict = o.problems.length === 0 ? "PASS" : "FAIL";
    if (o.problems.length > 0) failures++;
    console.log(
      `${verdict} ${kind}: answers while down ${JSON.stringify(o.whileDown)} (slowest ${o.slowestWhileDownMs} ms), ` +
        `in all ${JSON.stringify(o.all)}; order reads while down ${JSON.stringify(o.orderReads)}; accepted ${o.accepted}, settled ${o.settled}, failed ${o.failed}`,
    );
    for (const problem of o.problems) console.log(`  - ${problem}`);
  }
} finally {
  await stack.stop();
  rmSync(base, { recursive: true, force: true });
}
process.exit(failures > 0 ? 1 : 0);
