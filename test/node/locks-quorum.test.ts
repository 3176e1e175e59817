// The quorum lock (RedLock) over 3 and 5 independent redis-servers, each behind its own
// Upstash gateway: one node frozen (SIGSTOP), one killed (SIGKILL). Outcomes are asserted
// (who holds, who was refused, validity within the lease), never how fast they came.
import { Redis } from "@upstash/redis";
import { Redis as IORedis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway } from "../../dev/gateway/server.ts";
import { type RedisServer, startRedisServer } from "../../dev/lib/redis-server.ts";
import { aborted, eventually } from "../../dev/lib/wait.ts";
import { type Lease, QuorumLock } from "../../src/locks/index.ts";
import { lockKeys } from "../../src/locks/keys.ts";

const TOKEN = "quorum-test-token";

interface Node {
  server: RedisServer;
  gateway: Gateway;
  client: Redis;
  direct: IORedis;
}

const nodes: Node[] = [];
let seq = 0;
const fresh = () => `quorum-${++seq}-${Date.now().toString(36)}`;

beforeAll(async () => {
  for (let i = 0; i < 5; i++) {
    const server = await startRedisServer();
    const gateway = await startGateway({ redisUrl: server.url, token: TOKEN });
    const client = new Redis({ url: gateway.url, token: TOKEN, enableTelemetry: false, retry: false });
    const direct = new IORedis(server.url, { maxRetriesPerRequest: 1 });
    direct.on("error", () => undefined); // nodes are killed under it; it reconnects
    nodes.push({ server, gateway, client, direct });
  }
});
afterAll(async () => {
  for (const node of nodes) {
    node.direct.disconnect();
    await node.gateway.close();
    await node.server.stop();
  }
});

const frozen = new Set<Node>();
const killed = new Set<Node>();
const freeze = (node: Node) => {
  process.kill(node.server.pid, "SIGSTOP");
  frozen.add(node);
};
const thaw = (node: Node) => {
  process.kill(node.server.pid, "SIGCONT");
  frozen.delete(node);
};
const kill = async (node: Node) => {
  killed.add(node);
  await node.server.kill();
};
/** Puts every node back: thawed, and started again if killed. */
afterEach(async () => {
  for (const node of [...frozen]) thaw(node);
  for (const node of [...killed]) {
    await node.server.restart();
    killed.delete(node);
    // The gateway reconnects on its own; the next test wants every node answering.
    await eventually(
      "the gateway to reach the restarted node",
      async () => (await node.client.ping().catch(() => "")) === "PONG",
    );
  }
});

const holderOn = (node: Node, name: string) => node.direct.get(lockKeys(name).lock);
// A node that does not answer within nodeTimeoutMs is a lost vote; the lease leaves room for
// several such waits, so a busy machine's slow answers never cost a live node its vote.
const options = { leaseMs: 10_000, nodeTimeoutMs: 1_000, retryCount: 1, retryDelayMs: 20, retryJitterMs: 20 };

describe.each([3, 5])("a quorum lock over %i nodes", (n) => {
  const group = () => nodes.slice(0, n);
  const quorumLock = (name: string) =>
    new QuorumLock(
      group().map((node) => node.client),
      name,
    );

  it("acquires on every node, excludes a second holder, and releases everywhere", async () => {
    const name = fresh();
    const lease = (await quorumLock(name).tryAcquire(options)) as Lease;
    expect(lease).toBeDefined();
    expect(lease.fence).toBeUndefined();
    const holders = await Promise.all(group().map((node) => holderOn(node, name)));
    expect(new Set(holders).size).toBe(1);
    expect(holders[0]).toBeTruthy();
    expect(await quorumLock(name).tryAcquire(options)).toBeUndefined();
    expect(await lease.release()).toBe(true);
    expect(await Promise.all(group().map((node) => holderOn(node, name)))).toEqual(group().map(() => null));
  });

  it("still acquires with one node frozen and one killed, within its validity; releases reach every node that comes back", async () => {
    const [frozenNode, killedNode] = group().slice(-2) as [Node, Node];
    freeze(frozenNode);
    await kill(killedNode);
    const name = fresh();
    const started = Date.now();
    const lease = await quorumLock(name).tryAcquire(options);
    if (n === 3) {
      // 1 of 3 answers: no majority. What the live node took was given back.
      expect(lease).toBeUndefined();
      expect(await holderOn(nodes[0] as Node, name)).toBeNull();
      return;
    }
    expect(lease).toBeDefined();
    // The frozen node cost its timeout, and the validity accounts for it.
    expect((lease as Lease).expiresAt).toBeLessThan(started + options.leaseMs);
    expect((lease as Lease).expiresAt).toBeGreaterThan(Date.now());
    const live = group().slice(0, 3);
    expect(new Set(await Promise.all(live.map((node) => holderOn(node, name)))).size).toBe(1);
    expect(await (lease as Lease).release()).toBe(true);
    expect(await Promise.all(live.map((node) => holderOn(node, name)))).toEqual([null, null, null]);
    // The frozen node ran the acquire it had queued when it came back, then the release.
    thaw(frozenNode);
    await eventually("the thawed node to be released", async () => (await holderOn(frozenNode, name)) === null);
  });

  it("acquires with a bare majority and refuses without one", async () => {
    const majority = Math.floor(n / 2) + 1;
    const down = group().slice(majority);
    for (const node of down) freeze(node);
    const name = fresh();
    const lease = await quorumLock(name).tryAcquire(options);
    expect(lease).toBeDefined();
    await lease?.release();
    freeze(group()[majority - 1] as Node);
    expect(await quorumLock(fresh()).tryAcquire(options)).toBeUndefined();
  });
});

it("renews on a majority while fn runs, and aborts when the majority is lost", async () => {
  const RENEWED_LEASE_MS = 3_000;
  const group = nodes.slice(0, 3);
  const lock = new QuorumLock(
    group.map((node) => node.client),
    fresh(),
  );
  let abortedWhileRenewed: boolean | undefined;
  const outcome = lock
    .using(
      async (signal) => {
        await new Promise((resolve) => setTimeout(resolve, RENEWED_LEASE_MS + 500)); // past the lease: renewed
        abortedWhileRenewed = signal.aborted; // asserted below: using() wraps what fn throws
        freeze(group[1] as Node);
        freeze(group[2] as Node);
        await aborted(signal);
      },
      { ...options, leaseMs: RENEWED_LEASE_MS },
    )
    .catch((err: unknown) => err);
  expect(await outcome).toMatchObject({ name: "LockLostError" });
  expect(abortedWhileRenewed).toBe(false);
});
