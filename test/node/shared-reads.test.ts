// One isolate's readers share a load (src/isolate/shared-work.ts): when the request loading
// a sale disconnects before the load lands, every other reader still gets its answer, and
// none is cancelled as hung. All real: the Worker in workerd (Miniflare), the gateway and
// Redis. The load is held for real by stopping the gateway (SIGSTOP) until the readers are
// in; the first reader's client really disconnects (its fetch aborted). Here workerd lets the
// first reader's request run on after the disconnect (this passed with the old shared promise
// too); test/node/shared-work.test.ts shows what happens when a loader is gone for good.
import { execFileSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../../dev/lib/wait.ts";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";

const READERS = 20;

let stack: Stack;
const workerLogs: { level: string; message: string }[] = [];

beforeAll(async () => {
  stack = await startStack({ onWorkerLog: (log) => workerLogs.push(log) });
});
afterAll(async () => {
  if (stack) process.kill(stack.gateway.pid, "SIGCONT");
  await stack?.stop();
});

/** Bytes sent to the gateway and not read yet (it is stopped): requests waiting on it. */
function gatewayBacklog(): number {
  const port = new URL(stack.gateway.url).port;
  const out = execFileSync("ss", ["-Htn", "state", "established", `( sport = :${port} )`], { encoding: "utf8" });
  return out
    .split("\n")
    .filter((line) => line.trim() !== "")
    .reduce((sum, line) => sum + Number(line.trim().split(/\s+/)[0]), 0);
}

/**
 * Sends `first` while the gateway is stopped, waits until its Redis call is held there, sends
 * the other readers, disconnects `first`'s client, and lets the gateway go on.
 */
async function heldWhileFirstDisconnects(
  first: (signal: AbortSignal) => Promise<Response>,
  others: () => Promise<Response>[],
): Promise<{ firstAborted: boolean; statuses: number[]; bodies: unknown[] }> {
  const before = gatewayBacklog();
  process.kill(stack.gateway.pid, "SIGSTOP");
  try {
    const disconnect = new AbortController();
    const loading = first(disconnect.signal).then(
      () => false,
      () => true,
    );
    await eventually(
      () => "the first reader's Redis call to reach the stopped gateway",
      async () => gatewayBacklog() > before,
      30_000,
    );
    const waiting = others();
    // The others are in the isolate once the first reader's load is all the gateway holds: a
    // waiter sends nothing of its own until the load stalls. Then the first client goes away.
    disconnect.abort();
    const firstAborted = await loading;
    process.kill(stack.gateway.pid, "SIGCONT");
    const answers = await Promise.all(waiting);
    return {
      firstAborted,
      statuses: answers.map((a) => a.status),
      bodies: await Promise.all(answers.map((a) => a.json())),
    };
  } finally {
    process.kill(stack.gateway.pid, "SIGCONT");
  }
}

const hung = () => workerLogs.filter((log) => /hung|never generate a response/i.test(log.message));

describe("readers sharing one load whose first reader disconnects", () => {
  it("a new sale's page: every other reader gets 200, none cancelled as hung", async () => {
    const sale = await stack.api.createSale({ stock: 10, name: "shared page" });
    const read = (signal?: AbortSignal) => stack.worker.fetch(`/api/sales/${sale.id}`, { signal });

    const { firstAborted, statuses, bodies } = await heldWhileFirstDisconnects(read, () =>
      Array.from({ length: READERS }, () => read()),
    );

    expect(firstAborted).toBe(true);
    expect(statuses).toEqual(Array(READERS).fill(200));
    for (const body of bodies) expect(body).toMatchObject({ id: sale.id, remaining: 10 });
    expect(hung()).toEqual([]);
  });

  it("the checkout path's sale lookup: every other buyer gets the sale's answer, none cancelled as hung", async () => {
    // An id Redis does not know: each checkout looks the sale up in D1 (none there either).
    const saleId = "987654321";
    const tokens = await Promise.all(Array.from({ length: READERS + 1 }, (_, i) => stack.api.userToken(`shared-${i}`)));
    const checkout = (token: string, signal?: AbortSignal) =>
      stack.worker.fetch(`/api/sales/${saleId}/checkout`, {
        method: "POST",
        headers: { Authorization: `Bearer ${token}` },
        signal,
      });

    const { firstAborted, statuses, bodies } = await heldWhileFirstDisconnects(
      (signal) => checkout(tokens[0] as string, signal),
      () => tokens.slice(1).map((token) => checkout(token)),
    );

    expect(firstAborted).toBe(true);
    expect(statuses).toEqual(Array(READERS).fill(404));
    for (const body of bodies) expect(body).toMatchObject({ error: { code: "SALE_NOT_FOUND" } });
    expect(hung()).toEqual([]);
  });
});
