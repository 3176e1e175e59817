// The shebang rewrite on its own: only `allow-key-locking` goes, the line count stays.
import { describe, expect, it } from "vitest";
import { ScriptShas, sha1Hex, stripUpstashFlags } from "../../dev/gateway/scripts.js";

describe("stripUpstashFlags", () => {
  it.each([
    ["#!lua flags=allow-key-locking\nreturn 1", "#!lua\nreturn 1"],
    ["#!lua flags=no-writes,allow-key-locking\nreturn 1", "#!lua flags=no-writes\nreturn 1"],
    ["#!lua flags=allow-key-locking,allow-oom\r\nreturn 1", "#!lua flags=allow-oom\r\nreturn 1"],
    ["#!lua flags=allow-key-locking", "#!lua"],
    ["#!lua flags=no-writes\nreturn 1", "#!lua flags=no-writes\nreturn 1"],
    ["return 1 -- flags=allow-key-locking", "return 1 -- flags=allow-key-locking"],
    ["#!lua\nlocal s = 'flags=allow-key-locking'", "#!lua\nlocal s = 'flags=allow-key-locking'"],
  ])("%j -> %j", (source, expected) => {
    expect(stripUpstashFlags(source)).toBe(expected);
    expect(stripUpstashFlags(source).split("\n").length).toBe(source.split("\n").length);
  });
});

describe("ScriptShas", () => {
  const flagged = "#!lua flags=allow-key-locking\nreturn 1";
  const stripped = "#!lua\nreturn 1";

  it("maps the original SHA to the stripped one once EVAL has seen the script", () => {
    const shas = new ScriptShas();
    const originalSha = sha1Hex(flagged);
    expect(shas.prepare(["evalsha", originalSha, "0"]).args).toEqual([originalSha, "0"]);
    expect(shas.prepare(["eval", flagged, "0"])).toEqual({ name: "EVAL", args: [stripped, "0"] });
    expect(shas.prepare(["EVALSHA_RO", originalSha.toUpperCase(), "0"]).args).toEqual([sha1Hex(stripped), "0"]);
    expect(shas.prepare(["script", "exists", originalSha, "abc"]).args).toEqual(["exists", sha1Hex(stripped), "abc"]);
  });

  it("learns the mapping from SCRIPT LOAD and answers the original SHA", () => {
    const shas = new ScriptShas();
    const load = shas.prepare(["SCRIPT", "LOAD", flagged]);
    expect(load.args).toEqual(["LOAD", stripped]);
    expect(load.mapReply?.(Buffer.from(sha1Hex(stripped)))).toEqual(Buffer.from(sha1Hex(flagged)));
    expect(shas.prepare(["evalsha", sha1Hex(flagged), "0"]).args[0]).toBe(sha1Hex(stripped));
  });

  it("leaves scripts without the flag alone", () => {
    const shas = new ScriptShas();
    expect(shas.prepare(["SCRIPT", "LOAD", "return 2"])).toEqual({ name: "SCRIPT", args: ["LOAD", "return 2"] });
    expect(shas.prepare(["get", "k"])).toEqual({ name: "GET", args: ["k"] });
  });
});
