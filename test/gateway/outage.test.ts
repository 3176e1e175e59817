// Redis going away and coming back: prompt 5xx JSON, then recovery without a restart.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually } from "../../dev/lib/wait.ts";
import { type GatewayFixture, raw, startGatewayFixture } from "./gateway-fixture.ts";

let fixture: GatewayFixture;

beforeAll(async () => {
  fixture = await startGatewayFixture();
});
afterAll(() => fixture.stop());

describe("Redis outage", () => {
  it("answers 5xx JSON quickly while Redis is down and recovers when it is back", async () => {
    expect(await fixture.client.set("outage:k", "before")).toBe("OK");
    await fixture.redisServer.stop();

    for (const [path, body] of [
      ["/", ["GET", "outage:k"]],
      ["/pipeline", [["GET", "outage:k"]]],
      ["/multi-exec", [["GET", "outage:k"]]],
      ["/subscribe/outage", []],
      ["/", ["BLPOP", "outage:q", 1]],
    ] as const) {
      const started = Date.now();
      const reply = await raw(fixture.gateway, path, body);
      expect(Date.now() - started, path).toBeLessThan(3000);
      expect(reply.status, path).toBeGreaterThanOrEqual(500);
      expect(reply.body).toEqual({ error: expect.stringMatching(/^Redis unavailable/) });
    }
    const started = Date.now();
    await expect(fixture.client.get("outage:k")).rejects.toThrow(/Redis unavailable/);
    expect(Date.now() - started).toBeLessThan(3000);

    await fixture.redisServer.restart();
    await eventually("the gateway to answer PING", async () => (await raw(fixture.gateway, "/", ["PING"])).status === 200, 5000);
    expect(await fixture.client.set("outage:k", "after")).toBe("OK");
    expect(await fixture.client.get("outage:k")).toBe("after");
    expect(await fixture.client.multi().incr("outage:n").exec()).toEqual([1]);
  });
});

describe("Redis hanging", () => {
  it("answers 5xx JSON within the command timeout while Redis does not answer", async () => {
    const pid = Number((await fixture.direct.info("server")).match(/process_id:(\d+)/)?.[1]);
    expect(pid).toBeGreaterThan(0);
    process.kill(pid, "SIGSTOP");
    try {
      const replies = await Promise.all(
        (
          [
            ["/", ["GET", "hang:k"]],
            ["/multi-exec", [["GET", "hang:k"]]],
            ["/subscribe/hang", []],
          ] as const
        ).map(async ([path, body]) => {
          const started = Date.now();
          const reply = await raw(fixture.gateway, path, body);
          return { path, elapsed: Date.now() - started, status: reply.status, body: reply.body };
        }),
      );
      for (const reply of replies) {
        expect(reply.elapsed, reply.path).toBeLessThan(3000);
        expect(reply.status, reply.path).toBeGreaterThanOrEqual(500);
        expect(reply.body).toEqual({ error: expect.stringMatching(/^Redis unavailable/) });
      }
    } finally {
      process.kill(pid, "SIGCONT");
    }
    await eventually("the gateway to answer PING", async () => (await raw(fixture.gateway, "/", ["PING"])).status === 200, 5000);
    expect(await fixture.client.incr("hang:n")).toBe(1);
  });
});
