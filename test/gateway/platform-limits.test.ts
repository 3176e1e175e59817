// Upstash's record and request limits, refused with Upstash's texts by a gateway started with
// them (dev/gateway/platform-limits.ts), and nothing refused by a gateway started without.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RECORD_TOO_LARGE, REQUEST_TOO_LARGE } from "../../dev/gateway/platform-limits.ts";
import { type GatewayFixture, raw, startGatewayFixture } from "./gateway-fixture.ts";

const MAX_RECORD_BYTES = 8_192;
const MAX_REQUEST_BYTES = 4_096;
let fixture: GatewayFixture;

beforeAll(async () => {
  fixture = await startGatewayFixture({ maxRecordBytes: MAX_RECORD_BYTES, maxRequestBytes: MAX_REQUEST_BYTES });
});
afterAll(() => fixture.stop());

/** A hash grown straight in Redis until MEMORY USAGE says it is over the record limit. */
async function oversizedHash(key: string): Promise<number> {
  for (let i = 0; ; i += 50) {
    await fixture.direct.hset(key, Object.fromEntries(Array.from({ length: 50 }, (_, j) => [`field-${i + j}`, "x".repeat(40)])));
    const size = Number(await fixture.direct.memory("USAGE", key));
    if (size > MAX_RECORD_BYTES) return size;
  }
}

describe("the request limit", () => {
  it("refuses a body over it with Upstash's error, as a 400, and runs none of its commands", async () => {
    const big = "x".repeat(MAX_REQUEST_BYTES);
    for (const [path, body] of [
      ["/", ["SET", "limits:request", big]],
      ["/pipeline", [["SET", "limits:request", big]]],
      ["/multi-exec", [["SET", "limits:request", big]]],
    ] as const) {
      expect(await raw(fixture.gateway, path, body), path).toMatchObject({ status: 400, body: { error: REQUEST_TOO_LARGE } });
    }
    await expect(fixture.client.set("limits:request", big)).rejects.toThrow(REQUEST_TOO_LARGE);
    expect(await fixture.direct.exists("limits:request")).toBe(0);
    // Just under it passes.
    expect(await fixture.client.set("limits:request", "y".repeat(MAX_REQUEST_BYTES - 100))).toBe("OK");
  });
});

describe("the record limit", () => {
  it("refuses writes to a record already over it, by command and by script, and still reads and deletes it", async () => {
    const key = "limits:{sale}:buyers";
    const before = await oversizedHash(key);
    const fields = Number(await fixture.direct.hlen(key));

    await expect(fixture.client.hset(key, { late: "1" })).rejects.toThrow(RECORD_TOO_LARGE);
    expect(await raw(fixture.gateway, "/", ["HSET", key, "late", "1"])).toMatchObject({
      status: 400,
      body: { error: RECORD_TOO_LARGE },
    });
    // A script that names the key in KEYS is refused before it runs.
    const script = "redis.call('HSET', KEYS[1], ARGV[1], '1') return 1";
    await expect(fixture.client.eval(script, [key], ["by-script"])).rejects.toThrow(RECORD_TOO_LARGE);
    expect(await fixture.direct.hexists(key, "late")).toBe(0);
    expect(await fixture.direct.hexists(key, "by-script")).toBe(0);

    // In a pipeline only the refused write fails; the others run.
    const replies = await raw(fixture.gateway, "/pipeline", [
      ["HSET", key, "late", "1"],
      ["HGET", key, "field-0"],
      ["SET", "limits:{sale}:small", "ok"],
      ["EVAL_RO", "return redis.call('HLEN', KEYS[1])", "1", key],
    ]);
    expect(replies).toMatchObject({
      status: 200,
      body: [{ error: RECORD_TOO_LARGE }, { result: "x".repeat(40) }, { result: "OK" }, { result: fields }],
    });
    // A transaction with a refused write runs nothing.
    expect(
      await raw(fixture.gateway, "/multi-exec", [
        ["SET", "limits:{sale}:tx", "1"],
        ["HSET", key, "late", "1"],
      ]),
    ).toMatchObject({
      status: 400,
      body: { error: RECORD_TOO_LARGE },
    });
    expect(await fixture.direct.exists("limits:{sale}:tx")).toBe(0);

    // Deletes still work, and a record back under the limit takes writes again.
    expect(await fixture.client.hdel(key, ...Array.from({ length: fields - 10 }, (_, i) => `field-${i}`))).toBe(fields - 10);
    expect(Number(await fixture.direct.memory("USAGE", key))).toBeLessThan(before);
    expect(await fixture.client.hset(key, { late: "1" })).toBe(1);
  });

  it("lets a write take a record past the limit once, as Upstash does: it checks the record as it is", async () => {
    const key = "limits:string";
    const size = async () => Number(await fixture.direct.memory("USAGE", key));
    // Every append to a record still under the limit is taken, the one that crosses it too.
    while ((await size()) <= MAX_RECORD_BYTES) expect(await fixture.client.append(key, "b".repeat(1_000))).toBeGreaterThan(0);
    await expect(fixture.client.append(key, "c")).rejects.toThrow(RECORD_TOO_LARGE);
  });
});

it("a gateway started without the limits refuses neither", async () => {
  const open = await startGatewayFixture();
  try {
    const key = "limits:{sale}:buyers";
    await open.direct.hset(key, Object.fromEntries(Array.from({ length: 2_000 }, (_, i) => [`f${i}`, "x".repeat(40)])));
    expect(Number(await open.direct.memory("USAGE", key))).toBeGreaterThan(MAX_RECORD_BYTES);
    expect(await open.client.hset(key, { late: "1" })).toBe(1);
    expect(await open.client.set("limits:request", "x".repeat(MAX_REQUEST_BYTES * 2))).toBe("OK");
  } finally {
    await open.stop();
  }
});
