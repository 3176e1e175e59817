// The oversell lab on the whole local stack (LAB_ENABLED=true): every strategy sells from
// its own copy of one lab sale to the same crowd (each user clicking twice, all at once),
// and the lab's own exact counts are held against the 202s each strategy returned.
import { readFileSync } from "node:fs";
import { Redis as UpstashRedis } from "@upstash/redis";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { labCheckoutPath } from "../../dev/lib/api-client.ts";
import { type Stack, startStack } from "../../dev/stack/local-stack.ts";
import { drive, planCrowd, type Sample } from "../../load/runner/crowd.ts";
import { backoffDelayMs } from "../../src/locks/backoff.ts";
import { STRATEGIES as LAB_STRATEGIES, type StrategyName as LabStrategy } from "../../src/shared/lab-strategies.ts";

const USERS = 150;
const STOCK = 30;
const lua = (name: string) => readFileSync(new URL(`../../lua/${name}.lua`, import.meta.url), "utf8");

let stack: Stack;
let labSaleId: string;
const answers = new Map<LabStrategy, Sample[]>();

beforeAll(async () => {
  stack = await startStack({ vars: { LAB_ENABLED: "true" }, quorumNodes: 3 });
  labSaleId = await stack.api.createLabSale(STOCK);
  const crowd = await planCrowd(stack.api, USERS, 2, "lab-user-");
  for (const strategy of LAB_STRATEGIES) {
    const { samples } = await drive(crowd, (shot) => stack.api.labCheckout(strategy, labSaleId, shot.token), {
      concurrency: crowd.length,
    });
    answers.set(strategy, samples);
  }
});
afterAll(async () => {
  await stack?.stop();
});

const accepted = (strategy: LabStrategy) => (answers.get(strategy) ?? []).filter((s) => s.status === 202);
const codes = (strategy: LabStrategy) => new Set((answers.get(strategy) ?? []).map((s) => s.code));

describe("a concurrent spike per strategy", () => {
  it.each(["atomic", "durable-object", "durable-object-merged", "design-card"] as const)(
    "%s sells exactly the stock, to distinct users, with nothing oversold or duplicated",
    async (strategy) => {
      const copy = (await stack.api.labReport(labSaleId)).strategies[strategy];
      expect(accepted(strategy)).toHaveLength(STOCK);
      expect(new Set(accepted(strategy).map((s) => s.userId)).size).toBe(STOCK);
      expect(new Set(accepted(strategy).map((s) => s.orderId)).size).toBe(STOCK);
      expect(copy).toMatchObject({
        stock: STOCK,
        remaining: 0,
        accepted: STOCK,
        buyers: STOCK,
        oversold: 0,
        duplicates: 0,
        unsold: 0,
      });
      expect([...codes(strategy)].sort()).toEqual(["ACCEPTED", "ALREADY_PURCHASED", "SOLD_OUT"]);
    },
  );

  it.each(["lock", "redlock", "optimistic"] as const)("%s never oversells nor sells twice to one user", async (strategy) => {
    // Under this crowd they may turn everyone away (BUSY), which would pass every check below
    // by selling nothing: a buyer alone afterwards shows the copy still sells what remains.
    const before = (await stack.api.labReport(labSaleId)).strategies[strategy];
    const lateUser = `lab-late-${strategy}`;
    const late = await stack.api.labCheckout(strategy, labSaleId, await stack.api.userToken(lateUser));
    expect(late.status).toBe(before.unsold > 0 ? 202 : 409);
    const sold = [...accepted(strategy), ...(late.status === 202 ? [{ userId: lateUser, orderId: late.orderId }] : [])];
    const copy = (await stack.api.labReport(labSaleId)).strategies[strategy];
    // A request the client gave up on (a lock held long on a busy machine) may still have bought.
    const unanswered = (answers.get(strategy) ?? []).filter((s) => s.status === 0).length;
    expect(copy.accepted).toBeGreaterThanOrEqual(sold.length);
    expect(copy.accepted).toBeLessThanOrEqual(sold.length + unanswered);
    expect(copy.oversold).toBe(0);
    expect(copy.duplicates).toBe(0);
    expect(copy.accepted + copy.unsold).toBe(STOCK);
    expect(new Set(sold.map((s) => s.userId)).size).toBe(sold.length);
    expect(new Set(sold.map((s) => s.orderId)).size).toBe(sold.length);
    for (const code of codes(strategy))
      expect(["ACCEPTED", "ALREADY_PURCHASED", "SOLD_OUT", "BUSY", "NETWORK_ERROR"]).toContain(code);
  });

  it("naive's report counts exactly what it accepted, oversold and duplicates included", async () => {
    const copy = (await stack.api.labReport(labSaleId)).strategies.naive;
    const sold = accepted("naive");
    const users = new Set(sold.map((s) => s.userId)).size;
    expect(copy.accepted).toBe(sold.length);
    expect(copy.buyers).toBe(users);
    expect(copy.duplicates).toBe(sold.length - users);
    expect(copy.oversold).toBe(Math.max(0, sold.length - STOCK));
  });

  it("durable-object with an emulated hop still sells exactly the stock, each answer after the hop", async () => {
    const hopped = await stack.api.createLabSale(5, { objectHopMs: 30 });
    const crowd = await planCrowd(stack.api, 20, 1, "lab-hop-user-");
    const { samples } = await drive(crowd, (shot) => stack.api.labCheckout("durable-object", hopped, shot.token), {
      concurrency: crowd.length,
    });
    expect(samples.filter((s) => s.status === 202)).toHaveLength(5);
    expect(samples.filter((s) => s.status !== 202).map((s) => s.code)).toEqual(Array(15).fill("SOLD_OUT"));
    expect(Math.min(...samples.map((s) => s.latencyMs))).toBeGreaterThanOrEqual(30);
    expect((await stack.api.labReport(hopped)).strategies["durable-object"]).toMatchObject({ accepted: 5, oversold: 0 });
  });

  it("durable-object-merged sends the isolate's waiting checkouts as fewer RPCs than checkouts, and never oversells", async () => {
    // Every RPC waits the hop, so the crowd's later checkouts queue behind the first call and ride the next.
    const hopped = await stack.api.createLabSale(5, { objectHopMs: 200 });
    const crowd = await planCrowd(stack.api, 20, 2, "lab-merged-user-");
    const { samples } = await drive(crowd, (shot) => stack.api.labCheckout("durable-object-merged", hopped, shot.token), {
      concurrency: crowd.length,
    });
    const sold = samples.filter((s) => s.status === 202);
    expect(sold).toHaveLength(5);
    expect(new Set(sold.map((s) => s.userId)).size).toBe(5);
    for (const s of samples.filter((s) => s.status !== 202)) expect(["SOLD_OUT", "ALREADY_PURCHASED"]).toContain(s.code);
    const merged = (await stack.api.labReport(hopped)).strategies["durable-object-merged"];
    expect(merged).toMatchObject({ accepted: 5, buyers: 5, oversold: 0, duplicates: 0 });
    expect(merged.rpcs).toBeGreaterThan(0);
    expect(merged.rpcs).toBeLessThan(samples.length);
  });

  it("answers like the real checkout: 202 with a pending order, 409 with the API's error shape", async () => {
    const token = await stack.api.userToken("lab-shape-user");
    const res = await stack.api.fetch(labCheckoutPath("atomic", labSaleId), {
      method: "POST",
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ error: { code: "SOLD_OUT", message: expect.any(String) } });
    const fresh = await stack.api.createLabSale(1);
    const ok = await stack.api.fetch(labCheckoutPath("naive", fresh), {
      method: "POST",
      headers: { Authorization: `Bearer ${token}` },
    });
    expect(ok.status).toBe(202);
    expect(await ok.json()).toEqual({
      orderId: expect.stringMatching(/^[0-9]+$/),
      status: "pending",
      quantity: 1,
      variant: "default",
    });
  });

  it("refuses unknown strategies, unknown lab sales, missing tokens and non-admins", async () => {
    const token = await stack.api.userToken("lab-edge-user");
    const auth = { Authorization: `Bearer ${token}` };
    const post = (path: string, headers: Record<string, string> = auth) => stack.api.fetch(path, { method: "POST", headers });
    expect((await post(`/lab/bogus/sales/${labSaleId}/checkout`)).status).toBe(404);
    expect((await post(labCheckoutPath("lock", crypto.randomUUID()))).status).toBe(404);
    expect((await post(labCheckoutPath("lock", "not-a-uuid"))).status).toBe(400);
    expect((await post(labCheckoutPath("lock", labSaleId), {})).status).toBe(401);
    expect((await stack.api.fetch(`/lab/sales/${labSaleId}/report`, { headers: auth })).status).toBe(401);
    expect((await post("/lab/sales", { ...auth, "Content-Type": "application/json" })).status).toBe(401);
  });
});

describe("the lab's Lua scripts", () => {
  let redis: Redis;
  /** Scripts run as the Worker runs them: through the gateway, which strips Upstash's flag for Redis 7.0. */
  let run: (script: string, key: string, ...args: string[]) => Promise<unknown>;
  beforeAll(() => {
    redis = new Redis(stack.redis.url);
    const upstash = new UpstashRedis({ url: stack.gateway.url, token: stack.gateway.token, enableTelemetry: false });
    run = (script, key, ...args) => upstash.eval(lua(script), [key], args);
  });
  afterAll(() => {
    redis.disconnect();
  });

  it("lab-cas writes only on the version read, and counts each write", async () => {
    await redis.hset("t:{cas}", { remaining: 2, seq: 0 });
    expect(await run("lab-cas", "t:{cas}", "0", "1")).toBe(1);
    expect(await run("lab-cas", "t:{cas}", "0", "1")).toBe(0); // a stale read loses
    expect(await run("lab-cas", "t:{cas}", "1", "0")).toBe(2);
    expect(await redis.hgetall("t:{cas}")).toEqual({ remaining: "0", seq: "2" });
  });
});

describe("lock backoff", () => {
  it("grows exponentially up to the cap, with jitter in the upper half", () => {
    expect(backoffDelayMs(0, 10, 250, () => 0)).toBe(5);
    expect(backoffDelayMs(0, 10, 250, () => 1)).toBe(10);
    expect(backoffDelayMs(3, 10, 250, () => 0.5)).toBe(60);
    expect(backoffDelayMs(10, 10, 250, () => 1)).toBe(250);
    expect(backoffDelayMs(10, 10, 250, () => 0)).toBe(125);
  });
});

describe("with LAB_ENABLED off", () => {
  let plain: Stack;
  beforeAll(async () => {
    plain = await startStack();
  });
  afterAll(async () => {
    await plain?.stop();
  });

  it("every lab route answers 404 like a route that does not exist", async () => {
    const admin = { Authorization: `Bearer ${plain.secrets.ADMIN_TOKEN}`, "Content-Type": "application/json" };
    const token = await plain.api.userToken("lab-off-user");
    const responses = await Promise.all([
      plain.worker.fetch("/lab/sales", { method: "POST", headers: admin, body: JSON.stringify({ stock: 5 }) }),
      plain.worker.fetch(`/lab/sales/${crypto.randomUUID()}/report`, { headers: admin }),
      plain.worker.fetch(labCheckoutPath("atomic", crypto.randomUUID()), {
        method: "POST",
        headers: { Authorization: `Bearer ${token}` },
      }),
      plain.worker.fetch("/lab/anything"),
    ]);
    for (const res of responses) {
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: { code: "NOT_FOUND", message: "no such route" } });
    }
  });
});
