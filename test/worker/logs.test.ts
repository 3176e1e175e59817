import { env } from "cloudflare:test";
import { afterEach, describe, expect, it, vi } from "vitest";
import { bucketKeys } from "../../src/shared/keys";
import { errorSummary } from "../../src/shared/log";
import { BASE, bearer, createSale, handleWithVars, redis, userToken } from "./helpers";

// What the Worker writes to its logs when Redis fails, read off the console it writes to.

/** Every console line written while `work` runs. */
async function logsOf(work: () => Promise<unknown>): Promise<unknown[][]> {
  const calls: unknown[][] = [];
  for (const level of ["log", "warn", "error"] as const) {
    vi.spyOn(console, level).mockImplementation((...args: unknown[]) => {
      calls.push(args);
    });
  }
  await work();
  return calls;
}
afterEach(() => vi.restoreAllMocks());

describe("logs", () => {
  it("are one JSON object per line, with a Redis error's class and message but not the command it quotes", async () => {
    const sale = await createSale();
    const outbox = bucketKeys(sale.id, 0, 1).outbox;
    await redis.set(outbox, "not a sorted set"); // every read of the outbox now fails with WRONGTYPE
    const lines = await logsOf(() =>
      handleWithVars({}, new Request(`${BASE}/admin/sales/${sale.id}/report`, { headers: bearer(env.ADMIN_TOKEN) })).then((res) =>
        expect(res.status).toBe(503),
      ),
    );
    expect(lines).toHaveLength(1);
    const [line] = lines as [unknown[]];
    expect(line).toHaveLength(1);
    expect(JSON.parse(line[0] as string)).toEqual({
      level: "warn",
      message: "answered 503: a store or provider failed",
      // The request's trace (src/shared/trace.ts), which Workers Logs finds every line of by.
      traceId: expect.stringMatching(/^[0-9a-f]{32}$/),
      saleId: sale.id,
      answer: "redis cannot be reached right now",
      error: {
        name: "UpstashError",
        message: expect.stringMatching(/WRONGTYPE Operation against a key holding the wrong kind of value$/),
      },
    });
    expect(line[0]).not.toContain(outbox);
    expect(line[0]).not.toContain("command was");
    await redis.del(outbox);
  });

  it("never carry the buyer's token or the Redis token when checkout cannot reach Redis", async () => {
    const sale = await createSale();
    const token = await userToken("log-buyer");
    const lines = await logsOf(async () => {
      const unreachable = { UPSTASH_REDIS_REST_URL: "http://127.0.0.1:1", REDIS_TIMEOUT_MS: "300" }; // a real refused connection
      const checkout = new Request(`${BASE}/api/sales/${sale.id}/checkout`, { method: "POST", headers: bearer(token) });
      const res = await handleWithVars(unreachable, checkout);
      expect(res.status).toBe(503);
    });
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) {
      expect(line).toHaveLength(1);
      const text = line[0] as string;
      expect(JSON.parse(text)).toMatchObject({ level: expect.any(String), message: expect.any(String) });
      for (const secret of [token, env.UPSTASH_REDIS_REST_TOKEN, env.ADMIN_TOKEN, env.JWT_SECRET, "log-buyer"]) {
        expect(text).not.toContain(secret);
      }
    }
  });

  it("summarize an error as its class and the start of its message", () => {
    expect(errorSummary(new Error('ERR boom, command was: ["evalsha","abc","1","k","user-1"]'))).toEqual({
      name: "Error",
      message: "ERR boom",
    });
    expect(errorSummary(new SyntaxError("Unable to parse response body: <html>secret</html>"))).toEqual({
      name: "SyntaxError",
      message: "Unable to parse response body",
    });
    expect(errorSummary(new Error(`long ${"x".repeat(500)}`)).message).toHaveLength(160);
    expect(errorSummary("a thrown string with user-1 in it")).toEqual({ name: "string", message: "" });
  });
});
