// The global limits per user and per client address (a sliding window counted in the
// suite's Redis): joining a queue, dev login, pay, cancel and order reads. The suite turns
// them off ("0"); each test here sets its own through the Worker's vars. What a blocked
// caller costs at the gateway: test/node/global-limits.test.ts.
import { describe, expect, it } from "vitest";
import { bearer, createSale, fetchWithVars, freshAddress, LOOPBACK_BASE, userToken } from "./helpers";

/** Names of their own for each test, so counts in the suite's shared Redis never meet. */
const fresh = (what: string) => `${what}-${crypto.randomUUID().slice(0, 8)}`;

/** The isolate's per-user bucket off: these tests count the global layer alone. */
const GLOBAL_ONLY = { USER_RATE_LIMIT: "0" };

async function errorCode(res: Response): Promise<string> {
  return ((await res.json()) as { error: { code: string } }).error.code;
}

const readOrders = async (vars: Partial<Env>, userId: string, address = freshAddress()) =>
  fetchWithVars({ ...GLOBAL_ONLY, ...vars }, "/api/orders", {
    headers: { ...bearer(await userToken(userId)), "CF-Connecting-IP": address },
  });

describe("global limits per user and per client address", () => {
  it("count one user across 20 isolates once: the allowance in all, not once per isolate", async () => {
    const userId = fresh("spread");
    const statuses: number[] = [];
    // Each request with a Redis client, and so a limiter, of its own (a REDIS_TIMEOUT_MS of its
    // own makes the Worker build a new client): as if each landed in another isolate.
    for (let round = 0; round < 3; round++) {
      for (let isolate = 0; isolate < 20; isolate++) {
        const vars = { ORDER_READS_PER_USER_PER_MIN: "5", REDIS_TIMEOUT_MS: String(10_000 + isolate) };
        const res = await readOrders(vars, userId);
        statuses.push(res.status);
        if (res.status === 429) {
          expect(Number(res.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
          expect(res.headers.get("RateLimit-Limit")).toBe("5");
        }
      }
    }
    // Five a minute, then blocked, and blocked stays blocked. (A window boundary falling inside
    // the run weighs the last window's five with the floor of a fraction: at most one more.)
    const admitted = statuses.indexOf(429);
    expect(admitted).toBeGreaterThanOrEqual(5);
    expect(admitted).toBeLessThanOrEqual(6);
    expect(statuses.slice(0, admitted)).toEqual(Array(admitted).fill(200));
    expect(statuses.slice(admitted)).toEqual(Array(statuses.length - admitted).fill(429));
    // Another user is not slowed.
    expect((await readOrders({ ORDER_READS_PER_USER_PER_MIN: "5" }, fresh("other"))).status).toBe(200);
  });

  it("count many users from one client address together; another address is not slowed", async () => {
    const address = freshAddress();
    const vars = { ORDER_READS_PER_IP_PER_MIN: "4" };
    const statuses: number[] = [];
    for (let i = 0; i < 7; i++) statuses.push((await readOrders(vars, fresh("crowd"), address)).status);
    expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
    expect(statuses.slice(4)).toEqual([429, 429, 429]);
    const limited = await readOrders(vars, fresh("crowd"), address);
    expect([limited.status, await errorCode(limited)]).toEqual([429, "RATE_LIMITED"]);
    expect((await readOrders(vars, fresh("crowd"))).status).toBe(200);
  });

  it("count an IPv6 caller by its ADDRESS_PREFIX_V6 prefix: addresses inside one /64 are one address", async () => {
    const prefix = freshAddress().split("::")[0] as string;
    const vars = { ORDER_READS_PER_IP_PER_MIN: "4" };
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await readOrders(vars, fresh("rotating"), `${prefix}::${i + 1}`)).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429]);
    // Grouped by the whole address instead (ADDRESS_PREFIX_V6=128), each is its own.
    const exact = { ...vars, ADDRESS_PREFIX_V6: "128" };
    expect((await readOrders(exact, fresh("rotating"), `${prefix}::99`)).status).toBe(200);
  });

  it("cover joining a queue, dev login, pay, cancel and both order reads", async () => {
    const unqueued = await createSale({ stock: 1 });
    const userId = fresh("routes");
    const auth = bearer(await userToken(userId));
    const address = freshAddress();
    const headers = { ...auth, "CF-Connecting-IP": address };
    const json = { ...headers, "Content-Type": "application/json" };
    const routes: [string, Partial<Env>, string, RequestInit, string?][] = [
      ["join", { QUEUE_JOINS_PER_USER_PER_MIN: "1" }, `/api/sales/${unqueued.id}/queue`, { method: "POST", headers }],
      ["order", { ORDER_READS_PER_USER_PER_MIN: "1" }, "/api/orders/123456789", { headers }],
      ["orders", { ORDER_READS_PER_USER_PER_MIN: "1" }, "/api/orders", { headers }],
      [
        "pay",
        { ORDER_CHANGES_PER_USER_PER_MIN: "1" },
        "/api/orders/123456789/pay",
        { method: "POST", headers: { ...json, "Idempotency-Key": fresh("pay") }, body: '{"paymentToken":"tok_visa"}' },
        LOOPBACK_BASE, // the dev provider acts on a loopback Host only
      ],
      ["cancel", { ORDER_CHANGES_PER_USER_PER_MIN: "1" }, "/api/orders/123456789/cancel", { method: "POST", headers }],
      [
        "dev login",
        { DEV_LOGIN: "true", DEV_LOGINS_PER_USER_PER_MIN: "1" },
        "/api/dev/login",
        {
          method: "POST",
          headers: { "Content-Type": "application/json", "CF-Connecting-IP": address },
          body: JSON.stringify({ userId }),
        },
        LOOPBACK_BASE,
      ],
    ];
    // Order reads share one allowance, as do pay and cancel: each pair's second is the one refused.
    const expected = { join: 409, order: 404, orders: 429, pay: 404, cancel: 429, "dev login": 200 };
    for (const [name, vars, path, init, base] of routes) {
      const first = await fetchWithVars({ ...GLOBAL_ONLY, ...vars }, path, init, base);
      expect(first.status, name).toBe(expected[name as keyof typeof expected]);
      const second = await fetchWithVars({ ...GLOBAL_ONLY, ...vars }, path, init, base);
      expect([second.status, await errorCode(second)], name).toEqual([429, "RATE_LIMITED"]);
    }
  });

  it("fail closed: a request Redis cannot count is refused with 503, never let through", async () => {
    const down = { UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", REDIS_TIMEOUT_MS: "2000" };
    // GET /api/orders reads D1 only: with its limits off it answers 200 while Redis is down.
    expect((await readOrders(down, fresh("down"))).status).toBe(200);
    const limited = { ...down, ORDER_READS_PER_USER_PER_MIN: "100", ORDER_READS_PER_IP_PER_MIN: "100" };
    expect((await readOrders(limited, fresh("down"))).status).toBe(503);
    // Dev login needs no Redis either: only its limit can refuse it here.
    const login = await fetchWithVars(
      { ...down, DEV_LOGIN: "true", DEV_LOGINS_PER_IP_PER_MIN: "100" },
      "/api/dev/login",
      { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ userId: fresh("down") }) },
      LOOPBACK_BASE,
    );
    expect(login.status).toBe(503);
  });

  it("refuse a caller Redis has blocked in this isolate without asking Redis again", async () => {
    const userId = fresh("blocked");
    // The address's limit on too, far out of reach: a blocked user is not counted against it.
    const vars = { ORDER_READS_PER_USER_PER_MIN: "2", ORDER_READS_PER_IP_PER_MIN: "1000" };
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await readOrders(vars, userId)).status);
    expect(statuses).toEqual([200, 200, 429]);
    // Redis out of reach now: the block is answered from the ephemeral cache (429), where a
    // request that needed Redis would be refused 503, as another user's is.
    const down = { ...vars, UPSTASH_REDIS_REST_URL: "http://127.0.0.1:9", REDIS_TIMEOUT_MS: "2000" };
    expect((await readOrders(down, userId)).status).toBe(429);
    expect((await readOrders(down, fresh("unblocked"))).status).toBe(503);
  });
});
