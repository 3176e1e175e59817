// What a page or a process that reaches the gateway without being one of its clients can do:
// another Host name (DNS rebinding) gets nothing, administrative commands are refused unless
// the gateway was started to allow them, and the emulated hop is bounded.

import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnGateway } from "../../dev/gateway/process.ts";
import { startGateway } from "../../dev/gateway/server.ts";
import { requestAsHost } from "../../dev/lib/net.ts";
import { ROOT } from "../../dev/lib/project.ts";
import { type GatewayFixture, raw, startGatewayFixture, TOKEN } from "./gateway-fixture.ts";

let fixture: GatewayFixture;

beforeAll(async () => {
  fixture = await startGatewayFixture();
});
afterAll(() => fixture.stop());

/** POST `command` to the gateway on `port` as if `host` named it. */
async function postWithHost(port: number, host: string, command: unknown): Promise<{ status: number; body: unknown }> {
  const { status, text } = await requestAsHost(port, host, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(command),
  });
  return { status, body: JSON.parse(text) };
}

describe("Host names", () => {
  it("answers loopback names only, running nothing for any other", async () => {
    const { port } = fixture.gateway;
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, "127.0.0.2", `[::1]:${port}`, `app.localhost:${port}`]) {
      expect((await postWithHost(port, host, ["SET", "host:ok", host])).status, host).toBe(200);
    }
    fixture.gateway.resetStats();
    for (const host of [`evil.example:${port}`, "127.0.0.1.nip.io", "localhost.evil.example", "0.0.0.0", "[::ffff:7f00:1]"]) {
      const reply = await postWithHost(port, host, ["SET", "host:rebound", "x"]);
      expect(reply.status, host).toBe(403);
      expect(reply.body).toEqual({ error: expect.stringMatching(/not a loopback name/) });
    }
    expect(fixture.gateway.stats()).toEqual({ requests: 0, commands: 0 });
    expect(await fixture.direct.exists("host:rebound")).toBe(0);
  });

  it("also answers the names it was started to allow", async () => {
    const widened = await startGateway({ redisUrl: fixture.redisServer.url, token: TOKEN, allowedHosts: ["gateway.internal"] });
    try {
      expect((await postWithHost(widened.port, `gateway.internal:${widened.port}`, ["PING"])).status).toBe(200);
      expect((await postWithHost(widened.port, "other.internal", ["PING"])).status).toBe(403);
    } finally {
      await widened.close();
    }
  });
});

describe("administrative commands", () => {
  const admin = [
    ["FLUSHALL"],
    ["FLUSHDB", "ASYNC"],
    ["CONFIG", "SET", "maxmemory", "1mb"],
    ["REPLICAOF", "203.0.113.1", "6379"],
    ["SLAVEOF", "203.0.113.1", "6379"],
    ["KEYS", "*"],
    ["DEBUG", "SLEEP", "0"],
    ["SHUTDOWN", "NOSAVE"],
    ["ACL", "SETUSER", "mallory", "on"],
    ["MODULE", "LIST"],
    ["CLIENT", "KILL", "TYPE", "normal"],
    ["SCRIPT", "FLUSH"],
    ["monitor"],
  ];

  it("are refused, alone, in a pipeline and in a transaction, and Redis is unchanged", async () => {
    await fixture.direct.set("admin:keep", "1");
    const maxmemory = await fixture.direct.config("GET", "maxmemory");
    for (const command of admin) {
      const reply = await raw(fixture.gateway, "/", command);
      expect(reply.status, command.join(" ")).toBe(400);
      expect(reply.body, command.join(" ")).toEqual({ error: expect.stringMatching(/^ERR .*(administrative|not supported)/) });
    }
    const pipeline = await raw(fixture.gateway, "/pipeline", [["GET", "admin:keep"], ["FLUSHDB"], ["GET", "admin:keep"]]);
    expect(pipeline.body).toEqual([{ result: "1" }, { error: expect.stringMatching(/administrative/) }, { result: "1" }]);
    const tx = await raw(fixture.gateway, "/multi-exec", [
      ["SET", "admin:tx", "1"],
      ["CONFIG", "RESETSTAT"],
    ]);
    expect(tx.status).toBe(400);
    expect(await fixture.direct.exists("admin:tx")).toBe(0);
    expect(await fixture.direct.get("admin:keep")).toBe("1");
    expect(await fixture.direct.config("GET", "maxmemory")).toEqual(maxmemory);
    expect(await fixture.direct.info("replication")).toContain("role:master");
    // What the clients send still runs.
    expect((await raw(fixture.gateway, "/", ["SCRIPT", "LOAD", "return 1"])).status).toBe(200);
    expect((await raw(fixture.gateway, "/", ["CLIENT", "ID"])).status).toBe(200);
  });

  it("run when the gateway is started with --allow-admin-commands", async () => {
    const gateway = await spawnGateway({ redisUrl: fixture.redisServer.url, token: TOKEN, allowAdminCommands: true });
    try {
      await fixture.direct.set("admin:flushed", "1");
      const res = await fetch(gateway.url, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(["FLUSHDB"]),
      });
      expect(await res.json()).toEqual({ result: "OK" });
      expect(await fixture.direct.exists("admin:flushed")).toBe(0);
    } finally {
      await gateway.stop();
    }
  });
});

describe("emulated hop", () => {
  it("is bounded to a second, on the route, in the options and on the command line", async () => {
    expect((await raw(fixture.gateway, "/__gateway/latency?ms=1001", undefined)).status).toBe(404);
    expect((await raw(fixture.gateway, "/__gateway/latency?ms=1e9", undefined)).status).toBe(404);
    expect((await raw(fixture.gateway, "/__gateway/latency?ms=1000", undefined)).body).toEqual({ latencyMs: 1000 });
    expect((await raw(fixture.gateway, "/__gateway/latency?ms=0", undefined)).body).toEqual({ latencyMs: 0 });
    await expect(startGateway({ redisUrl: fixture.redisServer.url, token: TOKEN, latencyMs: 86_400_000 })).rejects.toThrow(
      /at most 1000/,
    );

    const cli = spawn(
      process.execPath,
      ["--import", "tsx", path.join(ROOT, "dev/gateway/main.ts"), "--token", "t", "--latency-ms", "100000"],
      {
        stdio: ["ignore", "ignore", "pipe"],
      },
    );
    let stderr = "";
    cli.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const code = await new Promise((resolve) => cli.once("exit", resolve));
    expect(code).toBe(2);
    expect(stderr).toContain("--latency-ms must be an integer from 0 to 1000");
  });
});
