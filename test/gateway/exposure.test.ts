// What a page or a process that reaches the gateway without being one of its clients can do:
// another Host name (DNS rebinding) gets nothing, administrative commands are refused unless
// the gateway was started to allow them (as commands, and inside scripts, where Redis itself
// denies them to the gateway's user), and the emulated hop is bounded.

import { spawn } from "node:child_process";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnGateway } from "../../dev/gateway/process.ts";
import { startGateway } from "../../dev/gateway/server.ts";
import { requestAsHost } from "../../dev/lib/net.ts";
import { ROOT } from "../../dev/lib/project.ts";
import { startRedisServer } from "../../dev/lib/redis-server.ts";
import { eventually } from "../../dev/lib/wait.ts";
import { type GatewayFixture, NOTHING_COUNTED, raw, startGatewayFixture, TOKEN } from "./gateway-fixture.ts";

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
    expect(fixture.gateway.stats()).toEqual(NOTHING_COUNTED);
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

/** How Redis refuses a command the gateway's user may not run (inside a script, or sent alone). */
const DENIED = /NOPERM|can't run this command/;

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

  it("are refused inside scripts too: Redis denies them to the gateway's user", async () => {
    await fixture.direct.set("admin:kept", "1");
    const maxmemory = await fixture.direct.config("GET", "maxmemory");
    for (const script of [
      "return redis.call('KEYS','*')",
      "return #redis.call('KEYS','*')",
      "return redis.call('FLUSHALL')",
      "return redis.call('FLUSHDB')",
      "return redis.call('SORT','admin:list')",
      "return redis.pcall('FLUSHALL')",
    ]) {
      const reply = await raw(fixture.gateway, "/", ["EVAL", script, "0"]);
      expect(reply.status, script).toBe(400);
      expect(reply.body, script).toEqual({ error: expect.stringMatching(DENIED) });
    }
    // The same through the client, by SHA (EVALSHA), in a pipeline and in a transaction.
    await expect(fixture.client.eval("return redis.call('FLUSHALL')", [], [])).rejects.toThrow(DENIED);
    const sha = await fixture.client.scriptLoad("return redis.call('FLUSHDB')");
    await expect(fixture.client.evalsha(sha, [], [])).rejects.toThrow(DENIED);
    const pipeline = await raw(fixture.gateway, "/pipeline", [
      ["EVAL", "return redis.call('FLUSHALL')", "0"],
      ["GET", "admin:kept"],
    ]);
    expect(pipeline.body).toEqual([{ error: expect.stringMatching(DENIED) }, { result: "1" }]);
    await raw(fixture.gateway, "/multi-exec", [["EVAL", "return redis.call('FLUSHALL')", "0"]]);
    expect(await fixture.direct.get("admin:kept")).toBe("1");
    expect(await fixture.direct.config("GET", "maxmemory")).toEqual(maxmemory);

    // An ordinary script still runs, with its keys, its writes and TIME.
    expect(
      await fixture.client.eval("redis.call('SET', KEYS[1], ARGV[1]); return redis.call('GET', KEYS[1])", ["admin:own"], ["v"]),
    ).toBe("v");
    expect(await fixture.client.eval("return #redis.call('TIME')", [], [])).toBe(2);
  });

  it("keep being refused inside scripts on a Redis with a password, after it restarts and forgets the gateway's user", async () => {
    // The URL's login (npm start's Redis wants one) makes the user; connections log in as the user.
    const redisServer = await startRedisServer({ password: "a-password-for-the-default-user" });
    const gateway = await startGateway({ redisUrl: redisServer.url, token: TOKEN });
    try {
      await redisServer.stop();
      await redisServer.restart(); // memory only: every user but default is gone
      await eventually("the gateway to answer again", async () => (await raw(gateway, "/", ["PING"])).status === 200, 10_000);
      expect((await raw(gateway, "/", ["EVAL", "return redis.call('FLUSHALL')", "0"])).body).toEqual({
        error: expect.stringMatching(DENIED),
      });
      // Connections of their own (a transaction, a blocking command) log in as the user too.
      expect((await raw(gateway, "/multi-exec", [["EVAL", "return #redis.call('KEYS','*')", "0"]])).body).toEqual([
        { error: expect.stringMatching(DENIED) },
      ]);
      expect((await raw(gateway, "/", ["BLPOP", "admin:none", "0.01"])).body).toEqual({ result: null });
    } finally {
      await gateway.close();
      await redisServer.stop();
    }
  });

  it("refuse to start on a Redis whose URL's user may not make the gateway's user", async () => {
    await fixture.direct.call(
      "ACL",
      "SETUSER",
      "plain",
      "reset",
      "on",
      ">plain-password",
      "~*",
      "+@all",
      "-@admin",
      "-@dangerous",
    );
    const url = new URL(fixture.redisServer.url);
    url.username = "plain";
    url.password = "plain-password";
    await expect(startGateway({ redisUrl: url.toString(), token: TOKEN })).rejects.toThrow(
      /could not make its Redis user.*NOPERM/,
    );
  });

  it("run when the gateway is started with --allow-admin-commands, in scripts too", async () => {
    const gateway = await spawnGateway({ redisUrl: fixture.redisServer.url, token: TOKEN, allowAdminCommands: true });
    const send = async (command: unknown) =>
      (
        await fetch(gateway.url, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify(command) })
      ).json();
    try {
      await fixture.direct.set("admin:flushed", "1");
      expect(await send(["EVAL", "return #redis.call('KEYS','admin:flushed')", "0"])).toEqual({ result: 1 });
      expect(await send(["FLUSHDB"])).toEqual({ result: "OK" });
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
