// Order events on the local stack, as a developer sees them: `npm start --webhook-url` with
// `npm run webhook-receiver` listening there. The real processes run: dev/start.ts (Redis,
// the gateway, wrangler dev with local D1 and Queues) and the receiver, on free ports and a
// state directory of their own; a checkout's events reach the receiver signed and verified.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../../dev/lib/net.ts";
import { ROOT } from "../../dev/lib/project.ts";
import { eventually } from "../../dev/lib/wait.ts";
import { demoSaleId, npmStart, stackApi } from "../support/npm-start.ts";

const stateDir = mkdtempSync(path.join(tmpdir(), "order-events-"));
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const child of children) child.kill("SIGTERM");
  await eventually(
    "the stack and the receiver to stop",
    async () => children.every((c) => c.exitCode !== null || c.signalCode !== null),
    20_000,
  );
  rmSync(stateDir, { recursive: true, force: true });
});

describe("npm start --webhook-url and npm run webhook-receiver", () => {
  it("registers the endpoint, and the receiver prints a checkout's events, verified; a forged one is refused", async () => {
    const ports = {
      WORKER_PORT: await freePort(),
      GATEWAY_PORT: await freePort(),
      REDIS_PORT: await freePort(),
      BEACON_PORT: await freePort(),
    };
    const receiverPort = await freePort();
    const receiver = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "dev/webhook-receiver.ts")], {
      cwd: ROOT,
      env: { ...process.env, PORT: String(receiverPort), STACK_STATE_DIR: stateDir },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(receiver);
    let printed = "";
    receiver.stdout?.on("data", (chunk: Buffer) => {
      printed += chunk.toString();
    });

    const url = `http://127.0.0.1:${receiverPort}/`;
    const run = npmStart(ports, stateDir, {}, ["--webhook-url", url]);
    children.push(run.child);
    const { output, exitCode } = await run.ready;
    expect(exitCode, output).toBeNull();
    expect(output.replace(/ +/g, " ")).toContain(`Events ${url}`);

    const api = stackApi(ports.WORKER_PORT, stateDir);
    const accepted = await api.checkout(demoSaleId(output), await api.userToken("events-local-buyer"), 1, "eu-42"); // the demo drop is in sizes
    expect(accepted.status).toBe(202);
    const orderId = accepted.orderId as string;
    await eventually(
      `the receiver to print order ${orderId}'s events`,
      async () => printed.includes(`order.awaiting_payment`) && printed.includes(`order ${orderId}`),
      60_000,
    );
    const lines = printed.split("\n").filter((l) => l.includes(`order ${orderId}`));
    expect(lines.map((l) => l.split(/\s+/)[1])).toEqual(["order.reserved", "order.awaiting_payment"]);

    const forged = await fetch(url, {
      method: "POST",
      headers: {
        "webhook-id": "msg_x",
        "webhook-timestamp": String(Math.floor(Date.now() / 1000)),
        "webhook-signature": "v1,AAAA",
      },
      body: "{}",
    });
    expect(forged.status).toBe(400);
  });
});
