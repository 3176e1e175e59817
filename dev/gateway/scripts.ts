// Lua script rewriting. @upstash/ratelimit (>= 2.1) starts every script with
// `#!lua flags=allow-key-locking`, a flag only Upstash knows: Redis 7.0 answers
// "ERR Unexpected flag in script shebang". We strip that flag before Redis sees the
// source and remember SHA1(original) -> SHA1(stripped), so the client's EVALSHA (computed
// over the original source) is rewritten and hits without a NOSCRIPT round trip.
import { createHash } from "node:crypto";
import type { PreparedCommand } from "./types.js";

const UPSTASH_ONLY_FLAG = "allow-key-locking";
/** Bounds the map: scripts are few, but the map must not grow without limit. */
const MAX_MAPPINGS = 1024;

export function sha1Hex(source: string): string {
  return createHash("sha1").update(source, "utf8").digest("hex");
}

/**
 * Removes the Upstash-only flag from the shebang line; returns the source unchanged when
 * the flag is absent. Only the first line changes, so Lua error line numbers stay right.
 */
export function stripUpstashFlags(source: string): string {
  if (!source.startsWith("#!")) return source;
  const newline = source.indexOf("\n");
  const lineEnd = newline === -1 ? source.length : newline;
  // Keep a CRLF's "\r" out of the tokens and put it back afterwards.
  const contentEnd = source[lineEnd - 1] === "\r" ? lineEnd - 1 : lineEnd;
  let changed = false;
  const tokens = source
    .slice(0, contentEnd)
    .split(/[ \t]+/)
    .flatMap((token) => {
      if (!token.startsWith("flags=")) return [token];
      const flags = token.slice("flags=".length).split(",");
      const kept = flags.filter((flag) => flag !== UPSTASH_ONLY_FLAG);
      if (kept.length === flags.length) return [token];
      changed = true;
      return kept.length > 0 ? [`flags=${kept.join(",")}`] : [];
    });
  return changed ? tokens.join(" ") + source.slice(contentEnd) : source;
}

export class ScriptShas {
  private readonly strippedShaOf = new Map<string, string>();

  /** Rewrites script-related commands; other commands pass through untouched. */
  prepare(command: string[]): PreparedCommand {
    const name = (command[0] ?? "").toUpperCase();
    const args = command.slice(1);
    switch (name) {
      case "EVAL":
      case "EVAL_RO":
        if (args[0] !== undefined) args[0] = this.strip(args[0]);
        return { name, args };
      case "EVALSHA":
      case "EVALSHA_RO":
        if (args[0] !== undefined) args[0] = this.resolve(args[0]);
        return { name, args };
      case "SCRIPT":
        return this.prepareScript(name, args);
      default:
        return { name, args };
    }
  }

  private prepareScript(name: string, args: string[]): PreparedCommand {
    const sub = args[0]?.toUpperCase();
    if (sub === "LOAD" && args[1] !== undefined) {
      const original = args[1];
      args[1] = this.strip(original);
      if (args[1] === original) return { name, args };
      // Upstash accepts the flag, so it answers with the SHA of what the client sent.
      const sha = Buffer.from(sha1Hex(original));
      return { name, args, mapReply: (reply) => (Buffer.isBuffer(reply) ? sha : reply) };
    }
    if (sub === "EXISTS") {
      for (let i = 1; i < args.length; i++) args[i] = this.resolve(args[i] as string);
    }
    return { name, args };
  }

  private strip(original: string): string {
    const source = stripUpstashFlags(original);
    if (source !== original) this.remember(sha1Hex(original), sha1Hex(source));
    return source;
  }

  private resolve(sha: string): string {
    return this.strippedShaOf.get(sha.toLowerCase()) ?? sha;
  }

  private remember(originalSha: string, strippedSha: string): void {
    if (this.strippedShaOf.has(originalSha)) return;
    if (this.strippedShaOf.size >= MAX_MAPPINGS) {
      const oldest = this.strippedShaOf.keys().next().value;
      if (oldest !== undefined) this.strippedShaOf.delete(oldest);
    }
    this.strippedShaOf.set(originalSha, strippedSha);
  }
}
