// The wire protocol, with raw fetch: auth, encodings, bad input, transactions, connections.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Gateway, startGateway } from "../../dev/gateway/server.js";
import { eventually } from "../../dev/lib/wait.ts";
import { connectionsNamed, type GatewayFixture, NOTHING_COUNTED, raw, startGatewayFixture, TOKEN } from "./gateway-fixture.ts";

let fixture: GatewayFixture;
let gateway: Gateway;

beforeAll(async () => {
  fixture = await startGatewayFixture();
  gateway = fixture.gateway;
});
afterAll(() => fixture.stop());

const b64 = (s: string | Buffer) => Buffer.from(s).toString("base64");

describe("auth", () => {
  const routes: [string, string, unknown][] = [
    ["POST", "/", ["SET", "auth:k", "v"]],
    ["POST", "/pipeline", [["SET", "auth:k", "v"]]],
    ["POST", "/multi-exec", [["SET", "auth:k", "v"]]],
    ["POST", "/subscribe/auth-channel", []],
    ["POST", "/psubscribe/auth-*", []],
    ["GET", "/__gateway/stats", undefined],
    ["POST", "/__gateway/stats/reset", undefined],
    ["POST", "/__gateway/latency?ms=5", undefined],
    ["POST", "/prefix/pipeline", [["SET", "auth:k", "v"]]],
  ];
  for (const [method, path, body] of routes) {
    it(`refuses ${method} ${path} without the right token`, async () => {
      gateway.resetStats();
      for (const token of [null, "wrong-token", `${TOKEN}x`, ""]) {
        const reply = await raw(gateway, path, body, { token, method });
        expect(reply.status).toBe(401);
        expect(reply.body).toEqual({ error: expect.stringMatching(/unauthorized/i) });
      }
      expect(gateway.stats()).toEqual(NOTHING_COUNTED);
      expect(await fixture.direct.exists("auth:k")).toBe(0);
    });
  }

  it("accepts a Basic or malformed scheme as unauthorized, not as an error", async () => {
    const res = await fetch(`${gateway.url}/`, {
      method: "POST",
      headers: { authorization: `Basic ${TOKEN}` },
      body: JSON.stringify(["PING"]),
    });
    expect(res.status).toBe(401);
  });
});

describe("encodings", () => {
  it("base64-encodes every string at every depth, but not integers, nulls or errors", async () => {
    await fixture.direct.del("enc:list");
    await fixture.direct.rpush("enc:list", "a", "bé");
    const reply = await raw(
      gateway,
      "/pipeline",
      [
        ["SET", "enc:k", "value"],
        ["GET", "enc:k"],
        ["LRANGE", "enc:list", 0, -1],
        ["LLEN", "enc:list"],
        ["GET", "enc:missing"],
        ["EVAL", "return {1, 'x', {'y', 2}}", 0],
        ["INCR", "enc:list"],
      ],
      { base64: true },
    );
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual([
      { result: b64("OK") },
      { result: b64("value") },
      { result: [b64("a"), b64("bé")] },
      { result: 2 },
      { result: null },
      { result: [1, b64("x"), [b64("y"), 2]] },
      { error: "WRONGTYPE Operation against a key holding the wrong kind of value" },
    ]);
  });

  it("answers plain UTF-8 strings without the header", async () => {
    const reply = await raw(gateway, "/", ["ECHO", "héllo 🎉"]);
    expect(reply.body).toEqual({ result: "héllo 🎉" });
  });

  it("is binary-safe: bytes that are not UTF-8 come back exactly with base64", async () => {
    const bytes = Buffer.from([0xff, 0xfe, 0x00, 0x80, 0x41, 0xc3, 0x28, 0x0a]);
    await fixture.direct.set("bin:raw", bytes);
    const encoded = await raw(gateway, "/", ["GET", "bin:raw"], { base64: true });
    expect(Buffer.from((encoded.body as { result: string }).result, "base64")).toEqual(bytes);
    // Without base64 the bytes are decoded as UTF-8, as Upstash does (lossy by nature).
    const plain = await raw(gateway, "/", ["GET", "bin:raw"]);
    expect(plain.body).toEqual({ result: bytes.toString("utf8") });
  });

  it("is binary-safe on the way in: bytes a script builds reach Redis exactly", async () => {
    const set = await raw(gateway, "/", [
      "EVAL",
      "return redis.call('SET', KEYS[1], string.char(255, 0, 128, 10))",
      1,
      "bin:lua",
    ]);
    expect(set.status).toBe(200);
    expect(await fixture.direct.getBuffer("bin:lua")).toEqual(Buffer.from([255, 0, 128, 10]));
    // Text arguments are written as their UTF-8 bytes.
    await raw(gateway, "/pipeline", [["SET", "bin:text", "ü€😀"]], { base64: true });
    expect(await fixture.direct.getBuffer("bin:text")).toEqual(Buffer.from("ü€😀", "utf8"));
  });

  it("turns JSON numbers and booleans into their text", async () => {
    await raw(gateway, "/", ["MSET", "num:a", 1.5, "num:b", true, "num:c", -7]);
    expect(await fixture.direct.mget("num:a", "num:b", "num:c")).toEqual(["1.5", "true", "-7"]);
  });
});

describe("bad input", () => {
  const cases: [string, string, unknown, RegExp][] = [
    ["malformed JSON", "/", '["SET", "bad:k", ', /not valid JSON/],
    ["an object body", "/", { command: "SET" }, /Invalid command/],
    ["an empty command", "/", [], /Invalid command/],
    ["a nested argument", "/", ["SET", "bad:k", ["v"]], /Invalid command/],
    ["a null argument", "/", ["SET", "bad:k", null], /Invalid command/],
    ["an empty pipeline", "/pipeline", [], /Invalid pipeline/],
    ["a pipeline of scalars", "/pipeline", ["SET", "bad:k", "v"], /Invalid command at index 0/],
    ["one bad command in a pipeline", "/pipeline", [["SET", "bad:k", "v"], {}], /Invalid command at index 1/],
    ["one bad command in a transaction", "/multi-exec", [["SET", "bad:k", "v"], []], /Invalid command at index 1/],
    ["malformed JSON in a transaction", "/multi-exec", "[[", /not valid JSON/],
  ];
  for (const [name, path, body, message] of cases) {
    it(`answers 400 to ${name} and writes nothing`, async () => {
      const reply = await raw(gateway, path, body);
      expect(reply.status).toBe(400);
      expect(reply.body).toEqual({ error: expect.stringMatching(message) });
      expect(await fixture.direct.exists("bad:k")).toBe(0);
    });
  }

  it("answers 413 to a body over the limit and writes nothing", async () => {
    const small = await startGateway({ redisUrl: fixture.redisServer.url, token: TOKEN, maxBodyBytes: 1024 });
    try {
      const reply = await raw(small, "/", ["SET", "bad:big", "x".repeat(2000)]);
      expect(reply.status).toBe(413);
      expect(reply.body).toEqual({ error: "Request body exceeds the limit of 1024 bytes" });
      // A chunked upload without Content-Length is cut off at the limit too.
      const chunks = [`["SET","bad:big","`, "y".repeat(800), "y".repeat(800), `"]`];
      const res = await fetch(`${small.url}/`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
        body: new ReadableStream({
          pull(controller) {
            const chunk = chunks.shift();
            if (chunk === undefined) controller.close();
            else controller.enqueue(new TextEncoder().encode(chunk));
          },
        }),
        duplex: "half",
      } as RequestInit);
      expect(res.headers.get("content-length")).toBeTruthy();
      expect(res.status).toBe(413);
      expect(await res.json()).toEqual({ error: "Request body exceeds the limit of 1024 bytes" });
      // Just under the limit passes.
      expect((await raw(small, "/", ["SET", "bad:ok", "x".repeat(900)])).status).toBe(200);
    } finally {
      await small.close();
    }
    expect(await fixture.direct.exists("bad:big")).toBe(0);
    expect(await fixture.direct.strlen("bad:ok")).toBe(900);
  });

  it("answers 404 JSON to what it cannot route", async () => {
    for (const [method, path] of [
      ["GET", "/"],
      ["PUT", "/pipeline"],
      ["POST", "/__gateway/nope"],
      ["POST", "/subscribe"],
      ["POST", "/__gateway/stats/reset/x"],
      ["POST", "/__gateway/latency?ms=-1"],
      ["POST", "/__gateway/latency?ms=soon"],
    ] as const) {
      const reply = await raw(gateway, path, method === "GET" ? undefined : ["PING"], { method });
      expect(reply.status, `${method} ${path}`).toBe(404);
      expect(reply.body).toEqual({ error: expect.stringMatching(/No route/) });
    }
  });

  it("refuses commands that would wedge or change a shared connection", async () => {
    for (const command of [["SUBSCRIBE", "x"], ["MULTI"], ["SELECT", "1"], ["CLIENT", "REPLY", "OFF"], ["HELLO", "3"]]) {
      const reply = await raw(gateway, "/", command);
      expect(reply.status, command.join(" ")).toBe(400);
      expect(reply.body).toEqual({ error: expect.stringMatching(/^ERR .* is not supported by the gateway/) });
    }
    const pipeline = await raw(gateway, "/pipeline", [
      ["SET", "ref:k", "1"],
      ["WATCH", "ref:k"],
      ["GET", "ref:k"],
    ]);
    expect(pipeline.body).toEqual([{ result: "OK" }, { error: expect.stringMatching(/not supported/) }, { result: "1" }]);
    const tx = await raw(gateway, "/multi-exec", [["SET", "ref:tx", "1"], ["EXEC"]]);
    expect(tx.status).toBe(400);
    expect(await fixture.direct.exists("ref:tx")).toBe(0);
    // The shared connection still answers in database 0.
    expect((await raw(gateway, "/", ["GET", "ref:k"])).body).toEqual({ result: "1" });
  });
});

describe("transactions", () => {
  it("runs on a dedicated pooled connection, never the shared one", async () => {
    const shared = await raw(gateway, "/", ["CLIENT", "INFO"]);
    const tx = await raw(gateway, "/multi-exec", [
      ["CLIENT", "INFO"],
      ["CLIENT", "ID"],
    ]);
    expect((shared.body as { result: string }).result).toContain(" name=gateway-shared ");
    const [info, id] = tx.body as [{ result: string }, { result: number }];
    expect(info.result).toContain(" name=gateway-tx ");
    expect(info.result).toContain(`id=${id.result} `);
    const sharedId = (await raw(gateway, "/", ["CLIENT", "ID"])).body as { result: number };
    expect(id.result).not.toBe(sharedId.result);
  });

  it("is not interleaved with concurrent requests", async () => {
    await fixture.direct.set("tx:counter", "0");
    const script = [
      ["SET", "tx:counter", "100"],
      ["INCR", "tx:counter"],
      ["GET", "tx:counter"],
    ];
    const concurrent = Array.from({ length: 20 }, () => raw(gateway, "/pipeline", [["SET", "tx:counter", "0"]]));
    const [tx] = await Promise.all([raw(gateway, "/multi-exec", script), ...concurrent]);
    expect(tx.body).toEqual([{ result: "OK" }, { result: 101 }, { result: "101" }]);
  });

  it("keeps runtime errors per command", async () => {
    await fixture.direct.set("tx:str", "x");
    const reply = await raw(gateway, "/multi-exec", [
      ["INCR", "tx:str"],
      ["SET", "tx:after", "1"],
    ]);
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual([{ error: "ERR value is not an integer or out of range" }, { result: "OK" }]);
  });

  it("answers 400 EXECABORT when Redis discards the transaction, and nothing is written", async () => {
    await fixture.direct.set("tx:abort", "1");
    const reply = await raw(gateway, "/multi-exec", [
      ["INCR", "tx:abort"],
      ["SET", "tx:abort"],
    ]);
    expect(reply.status).toBe(400);
    expect(reply.body).toEqual({ error: expect.stringMatching(/^EXECABORT/) });
    expect(await fixture.direct.get("tx:abort")).toBe("1");
    // The pooled connection is fine afterwards.
    expect((await raw(gateway, "/multi-exec", [["INCR", "tx:abort"]])).body).toEqual([{ result: 2 }]);
  });
});

describe("blocking commands", () => {
  it("run on a connection of their own, so the shared one keeps serving", async () => {
    await fixture.direct.del("block:q");
    const popped = raw(gateway, "/", ["BLPOP", "block:q", 5]);
    await eventually(
      "the blocking connection count",
      async () => (await connectionsNamed(fixture.direct, "gateway-blocking")) === 1,
    );
    const started = Date.now();
    expect((await raw(gateway, "/pipeline", [["RPUSH", "block:q", "job"]])).body).toEqual([{ result: 1 }]);
    expect(Date.now() - started).toBeLessThan(1000);
    expect((await popped).body).toEqual({ result: ["block:q", "job"] });
    await eventually(
      "the blocking connection count",
      async () => (await connectionsNamed(fixture.direct, "gateway-blocking")) === 0,
    );
  });

  it("release their connection when the client aborts", async () => {
    const abort = new AbortController();
    const pending = fetch(`${gateway.url}/`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(["BLPOP", "block:never", 0]),
      signal: abort.signal,
    }).catch((error: Error) => error.name);
    await eventually(
      "the blocking connection count",
      async () => (await connectionsNamed(fixture.direct, "gateway-blocking")) === 1,
    );
    abort.abort();
    expect(await pending).toBe("AbortError");
    await eventually(
      "the blocking connection count",
      async () => (await connectionsNamed(fixture.direct, "gateway-blocking")) === 0,
    );
  });
});

describe("stats", () => {
  it("counts authorized round trips, commands and the bytes of their bodies, over HTTP too", async () => {
    gateway.resetStats();
    const sent: [string, unknown][] = [
      ["/", ["PING"]],
      ["/pipeline", [["PING"], ["PING"], ["PING"]]],
      ["/multi-exec", [["PING"], ["PING"]]],
    ];
    const replies = await Promise.all(sent.map(([path, body]) => raw(gateway, path, body)));
    await raw(gateway, "/", ["PING"], { token: "wrong" });
    const counted = {
      requests: 3,
      commands: 6,
      requestBytes: sent.reduce((n, [, body]) => n + JSON.stringify(body).length, 0),
      responseBytes: replies.reduce((n, r) => n + JSON.stringify(r.body).length, 0),
    };
    expect(gateway.stats()).toEqual(counted);
    expect((await raw(gateway, "/__gateway/stats", undefined, { method: "GET" })).body).toEqual(counted);
    const reset = await raw(gateway, "/__gateway/stats/reset", undefined);
    expect(reset.body).toEqual(NOTHING_COUNTED);
    expect(gateway.stats()).toEqual(NOTHING_COUNTED);
  });
});

describe("emulated hop", () => {
  it("adds the configured round trip to every request", async () => {
    const timed = async () => {
      const started = performance.now();
      expect((await raw(gateway, "/", ["PING"])).body).toEqual({ result: "PONG" });
      return performance.now() - started;
    };
    expect((await raw(gateway, "/__gateway/latency?ms=40", undefined)).body).toEqual({ latencyMs: 40 });
    try {
      expect(await timed()).toBeGreaterThanOrEqual(38);
    } finally {
      expect((await raw(gateway, "/__gateway/latency?ms=0", undefined)).body).toEqual({ latencyMs: 0 });
    }
  });
});
