// @upstash/redis, default options, against the gateway and a real redis-server.

import { Redis } from "@upstash/redis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandStat } from "../../dev/lib/redis-stats.ts";
import { type GatewayFixture, raw, startGatewayFixture, TOKEN } from "./gateway-fixture.ts";

let fixture: GatewayFixture;
let redis: Redis;

beforeAll(async () => {
  fixture = await startGatewayFixture();
  redis = fixture.client;
});
afterAll(() => fixture.stop());

describe("data types through @upstash/redis", () => {
  it("strings, including non-ASCII text stored as its UTF-8 bytes", async () => {
    expect(await redis.set("str", "héllo, 世界 🎉")).toBe("OK");
    expect(await redis.get("str")).toBe("héllo, 世界 🎉");
    expect(await fixture.direct.getBuffer("str")).toEqual(Buffer.from("héllo, 世界 🎉", "utf8"));
    expect(await redis.get("missing")).toBeNull();
    expect(await redis.set("nx", "1", { nx: true })).toBe("OK");
    expect(await redis.set("nx", "2", { nx: true })).toBeNull();
    expect(await redis.mget("str", "missing", "nx")).toEqual(["héllo, 世界 🎉", null, 1]);
  });

  it("numbers: integers as numbers, floats from bulk strings", async () => {
    expect(await redis.incr("counter")).toBe(1);
    expect(await redis.incrby("counter", 41)).toBe(42);
    expect(await redis.incrbyfloat("float", 1.25)).toBe(1.25);
    expect(await fixture.direct.get("float")).toBe("1.25");
    // On the wire INCRBYFLOAT stays a string, INCR a JSON number, even past 2^53.
    const float = await raw(fixture.gateway, "/", ["INCRBYFLOAT", "float", "0.5"]);
    expect(float.body).toEqual({ result: "1.75" });
    const res = await fetch(`${fixture.gateway.url}/`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify(["INCRBY", "big", "9007199254740993"]),
    });
    expect(await res.text()).toBe('{"result":9007199254740993}');
  });

  it("hashes", async () => {
    expect(await redis.hset("hash", { name: "ada", age: 36, city: "london" })).toBe(3);
    expect(await redis.hget("hash", "name")).toBe("ada");
    expect(await redis.hgetall("hash")).toEqual({ name: "ada", age: 36, city: "london" });
    expect(await redis.hincrby("hash", "age", 1)).toBe(37);
    expect(await redis.hdel("hash", "city")).toBe(1);
    expect(await redis.hkeys("hash")).toEqual(["name", "age"]);
  });

  it("sets", async () => {
    expect(await redis.sadd("set", "a", "b", "c")).toBe(3);
    expect(await redis.sismember("set", "b")).toBe(1);
    expect(await redis.srem("set", "b")).toBe(1);
    expect((await redis.smembers("set")).sort()).toEqual(["a", "c"]);
    expect(await redis.scard("set")).toBe(2);
  });

  it("sorted sets with scores", async () => {
    expect(await redis.zadd("zset", { score: 1.5, member: "low" }, { score: 10, member: "high" })).toBe(2);
    expect(await redis.zincrby("zset", 2, "low")).toBe(3.5);
    expect(await redis.zrange("zset", 0, -1, { withScores: true })).toEqual(["low", 3.5, "high", 10]);
    expect(await redis.zscore("zset", "high")).toBe(10);
    expect(await redis.zrank("zset", "high")).toBe(1);
  });

  it("streams: xadd, xrange, consumer groups", async () => {
    const id1 = await redis.xadd("stream", "*", { item: "shoe", qty: 2 });
    const id2 = await redis.xadd("stream", "*", { item: "hat", qty: 1 });
    expect(id1).toMatch(/^\d+-\d+$/);
    const range = await redis.xrange("stream", "-", "+");
    expect(range).toEqual({ [id1]: { item: "shoe", qty: 2 }, [id2]: { item: "hat", qty: 1 } });
    expect(await redis.xgroup("stream", { type: "CREATE", group: "g", id: "0" })).toBe("OK");
    const read = await redis.xreadgroup("g", "c1", "stream", ">", { count: 1 });
    expect(read).toEqual([["stream", [[id1, ["item", "shoe", "qty", 2]]]]]);
    expect(await redis.xack("stream", "g", id1)).toBe(1);
    expect(await redis.xlen("stream")).toBe(2);
  });
});

describe("pipelines and transactions", () => {
  it("a pipeline runs in order and a failing command fails alone", async () => {
    await redis.set("pipe:str", "x");
    const results = await redis
      .pipeline()
      .set("pipe:a", "1")
      .lpush("pipe:str", "wrong type")
      .incr("pipe:a")
      .get("pipe:a")
      .exec({ keepErrors: true });
    expect(results.map((r) => r.error ?? null)).toEqual([
      null,
      "WRONGTYPE Operation against a key holding the wrong kind of value",
      null,
      null,
    ]);
    expect(results.map((r) => r.result)).toEqual(["OK", undefined, 2, 2]);
  });

  it("auto-pipelining batches concurrent commands into one round trip", async () => {
    fixture.gateway.resetStats();
    const values = await Promise.all([redis.set("ap:1", "a"), redis.set("ap:2", "b"), redis.incr("ap:3")]);
    expect(values).toEqual(["OK", "OK", 1]);
    expect(fixture.gateway.stats()).toMatchObject({ requests: 1, commands: 3 });
  });

  it("multi-exec runs the commands as one transaction", async () => {
    const results = await redis.multi().set("tx:a", "1").incr("tx:a").get("tx:a").exec();
    expect(results).toEqual(["OK", 2, 2]);
  });
});

describe("scripts", () => {
  it("eval, and evalsha after a miss", async () => {
    expect(await redis.eval("return ARGV[1] .. KEYS[1]", ["k"], ["v-"])).toBe("v-k");
    const source = "return redis.call('INCRBY', KEYS[1], ARGV[1])";
    await expect(redis.evalsha("0123456789abcdef0123456789abcdef01234567", [], [])).rejects.toThrow(/NOSCRIPT/);
    const sha = await redis.scriptLoad(source);
    expect(await redis.evalsha(sha, ["script:n"], [5])).toBe(5);
  });

  it("createScript falls back to EVAL once, then EVALSHA hits", async () => {
    const script = redis.createScript<number>("return redis.call('INCRBY', KEYS[1], ARGV[1]) * 2");
    await fixture.direct.config("RESETSTAT");
    expect(await script.exec(["script:c"], ["1"])).toBe(2);
    expect(await script.exec(["script:c"], ["1"])).toBe(4);
    expect(await script.exec(["script:c"], ["1"])).toBe(6);
    expect(await commandStat(fixture.direct, "eval")).toEqual({ calls: 1, failed: 0 });
    expect(await commandStat(fixture.direct, "evalsha")).toEqual({ calls: 3, failed: 1 });
  });

  it("a script with the Upstash-only allow-key-locking flag runs, and its original SHA hits", async () => {
    const source = "#!lua flags=allow-key-locking\nreturn redis.call('INCR', KEYS[1])";
    // Stock Redis refuses the flag: this is what the gateway hides.
    await expect(fixture.direct.eval(source, 1, "flag:n")).rejects.toThrow(/Unexpected flag/);
    const script = redis.createScript<number>(source);
    await fixture.direct.config("RESETSTAT");
    expect(await script.exec(["flag:n"], [])).toBe(1);
    expect(await script.exec(["flag:n"], [])).toBe(2);
    expect(await commandStat(fixture.direct, "eval")).toEqual({ calls: 1, failed: 0 });
    expect(await commandStat(fixture.direct, "evalsha")).toEqual({ calls: 2, failed: 1 });
  });

  it("SCRIPT LOAD of a flagged script answers the original SHA, which EXISTS and EVALSHA accept", async () => {
    const source = "#!lua flags=no-writes,allow-key-locking\nreturn redis.call('GET', KEYS[1])";
    const script = redis.createScript(source);
    const sha = await redis.scriptLoad(source);
    await script.exec(["x"], []); // computes the client's SHA of the source
    expect(sha).toBe(script.sha1);
    expect(await redis.scriptExists(sha)).toEqual([1]);
    await redis.set("flag:read", "v");
    await fixture.direct.config("RESETSTAT");
    expect(await redis.evalsha(sha, ["flag:read"], [])).toBe("v");
    expect(await commandStat(fixture.direct, "evalsha")).toEqual({ calls: 1, failed: 0 });
    // no-writes survived the stripping: the script may not write.
    const writer = "#!lua flags=no-writes,allow-key-locking\nreturn redis.call('SET', KEYS[1], 'x')";
    await expect(redis.eval(writer, ["flag:w"], [])).rejects.toThrow(/Write commands are not allowed/);
  });

  it("keeps Lua error line numbers of flagged scripts", async () => {
    const body = "local a = 1\nreturn redis.call('NOPE')";
    const flagged = redis.eval(`#!lua flags=allow-key-locking\n${body}`, [], []);
    const plain = redis.eval(`#!lua\n${body}`, [], []);
    const errorOf = (reply: Promise<unknown>) =>
      reply.then(
        () => "no error",
        (error: Error) => error.message,
      );
    const [flaggedError, plainError] = await Promise.all([errorOf(flagged), errorOf(plain)]);
    const lineOf = (e: string) => e.match(/user_script:(\d+)/)?.[1];
    expect(lineOf(flaggedError)).toBe("3");
    expect(lineOf(plainError)).toBe("3");
  });
});

describe("errors", () => {
  it("reports Redis errors verbatim", async () => {
    await redis.set("err:str", "x");
    await expect(redis.lpush("err:str", "y")).rejects.toThrow(
      "WRONGTYPE Operation against a key holding the wrong kind of value",
    );
    const reply = await raw(fixture.gateway, "/", ["LPUSH", "err:str", "y"]);
    expect(reply).toMatchObject({
      status: 400,
      body: { error: "WRONGTYPE Operation against a key holding the wrong kind of value" },
    });
  });
});

describe("base URL and headers", () => {
  it("works under a path prefix on every route", async () => {
    const prefixed = new Redis({ url: `${fixture.gateway.url}/some/prefix`, token: TOKEN });
    fixture.gateway.resetStats();
    expect(await prefixed.set("prefix:k", "v")).toBe("OK"); // /some/prefix/pipeline
    expect(await prefixed.hset("prefix:h", { f: "v" })).toBe(1);
    expect(await prefixed.hgetall("prefix:h")).toEqual({ f: "v" }); // /some/prefix (single command)
    expect(await prefixed.multi().get("prefix:k").exec()).toEqual(["v"]); // /some/prefix/multi-exec
    expect(fixture.gateway.stats().requests).toBe(4);
  });

  it("answers a different upstash-sync-token every time", async () => {
    const tokens = new Set<string | null>();
    for (let i = 0; i < 3; i++) tokens.add((await raw(fixture.gateway, "/", ["PING"])).headers.get("upstash-sync-token"));
    tokens.add((await raw(fixture.gateway, "/", ["PING"], { token: "wrong" })).headers.get("upstash-sync-token"));
    expect(tokens.size).toBe(4);
    expect(tokens.has(null)).toBe(false);
  });

  it("ignores Upstash-Telemetry headers", async () => {
    const res = await fetch(`${fixture.gateway.url}/`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "Upstash-Telemetry-Sdk": "x", "Upstash-Telemetry-Runtime": "y" },
      body: JSON.stringify(["PING"]),
    });
    expect(await res.json()).toEqual({ result: "PONG" });
  });
});
