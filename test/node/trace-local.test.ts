// `npm run trace -- <orderId>` as a developer runs it: against `npm start` (dev/start.ts with
// Redis, the gateway and wrangler dev with local D1 and Queues, on free ports and a state
// directory of its own), a checkout sent with a W3C traceparent is followed from the request's
// log line through Redis and the queue to D1, with times, by its public id and its internal one.
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { answerOf, checkoutPath } from "../../dev/lib/api-client.ts";
import { freePort } from "../../dev/lib/net.ts";
import { orderIdCipher } from "../../dev/lib/order-ids.ts";
import { ROOT } from "../../dev/lib/project.ts";
import { eventually } from "../../dev/lib/wait.ts";
import { demoSaleId, type NpmStartRun, npmStart, stackApi, stackSecrets, stopNpmStart } from "../support/npm-start.ts";

const stateDir = mkdtempSync(path.join(tmpdir(), "trace-local-"));
let run: NpmStartRun | undefined;

afterAll(async () => {
  if (run) await stopNpmStart(run.child, stateDir);
  rmSync(stateDir, { recursive: true, force: true });
});

/** What `npm run trace -- <orderId>` prints for the run on `workerPort`, and how it exited. */
async function trace(workerPort: number, orderId: string): Promise<{ code: number; out: string; err: string }> {
  const env = { ...process.env, STACK_STATE_DIR: stateDir, WORKER_PORT: String(workerPort) };
  return promisify(execFile)(process.execPath, ["--import", "tsx", path.join(ROOT, "dev/trace.ts"), orderId], { cwd: ROOT, env })
    .then(({ stdout, stderr }) => ({ code: 0, out: stdout, err: stderr }))
    .catch((e: { code: number; stdout: string; stderr: string }) => ({ code: e.code, out: e.stdout, err: e.stderr }));
}

describe("npm run trace", () => {
  it("prints one order's path with times, from the request's traceparent to its settled row", async () => {
    const ports = {
      WORKER_PORT: await freePort(),
      GATEWAY_PORT: await freePort(),
      REDIS_PORT: await freePort(),
      BEACON_PORT: await freePort(),
    };
    run = npmStart(ports, stateDir);
    const { output, exitCode } = await run.ready;
    expect(exitCode, output).toBeNull();

    const api = stackApi(ports.WORKER_PORT, stateDir);
    const traceId = "0af7651916cd43dd8448eb211c80319c";
    const accepted = await answerOf(
      await api.fetch(checkoutPath(demoSaleId(output)), {
        method: "POST",
        headers: {
          Authorization: `Bearer ${await api.userToken("trace-local-buyer")}`,
          "Content-Type": "application/json",
          traceparent: `00-${traceId}-b7ad6b7169203331-01`,
        },
        body: JSON.stringify({ quantity: 1, variant: "eu-42" }), // the demo drop is in sizes
      }),
    );
    expect(accepted.status).toBe(202);
    const orderId = accepted.orderId as string;
    const settled = await eventually(
      `order ${orderId} to be settled in D1`,
      async () => {
        const detail = await api.orderDetail(orderId);
        return detail.body?.status === "awaiting_payment" && detail.body;
      },
      60_000,
    );
    // The same trace, continued by the Worker's own span.
    expect(settled.traceparent).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));

    // The Worker's lines reach npm start's kept log as wrangler writes them: the consumer's last.
    const printed = await eventually(
      "npm run trace to print the consumer's line",
      async () => {
        const answer = await trace(ports.WORKER_PORT, orderId);
        return answer.out.includes("settlement: order settled") && answer;
      },
      60_000,
    );
    expect(printed.code, printed.err).toBe(0);
    const internal = orderIdCipher(stackSecrets(stateDir).ORDER_ID_KEY).toInternal(orderId);
    const [head, traced, ...steps] = printed.out.trimEnd().split("\n");
    expect(head).toContain(`order ${orderId} (internal ${internal})`);
    expect(traced).toBe(`traceparent ${settled.traceparent}`);
    // Each step: an ISO time, where, what; in time order, from the request to D1.
    const parsed = steps.map((line) => /^ {2}(\S+) {2}(.{11}) {2}(.+)$/.exec(line));
    expect(
      parsed.every((m) => m && !Number.isNaN(Date.parse(m[1] as string))),
      printed.out,
    ).toBe(true);
    const times = parsed.map((m) => m?.[1] as string);
    expect(times).toEqual([...times].sort());
    const path_ = parsed.map((m) => `${m?.[2]?.trim()}: ${m?.[3]}`);
    const at = (step: string) => path_.findIndex((p) => p.includes(step));
    expect(at("request: info checkout: order reserved"), printed.out).toBeGreaterThanOrEqual(0);
    expect(at("Redis: reserved"), printed.out).toBeGreaterThanOrEqual(0);
    // Lines are stamped as they reach the log, so the request's own line and the consumer's may
    // arrive in either order; both come after the reservation, which the order id dates.
    expect(at("queue -> D1: info settlement: order settled"), printed.out).toBeGreaterThan(at("Redis: reserved"));
    expect(at("request: info checkout: order reserved"), printed.out).toBeGreaterThan(at("Redis: reserved"));
    expect(
      path_.some((p) => p.startsWith("D1: ")),
      printed.out,
    ).toBe(true);

    // The internal id finds the same path; an order the stack does not hold is named as such.
    expect((await trace(ports.WORKER_PORT, internal)).out).toBe(printed.out);
    const unknown = await trace(ports.WORKER_PORT, "1");
    expect(unknown.code).toBe(1);
    expect(unknown.err).toContain("no order 1");
  });
});
