// CLI: npm run gateway -- --port 8079 --redis redis://127.0.0.1:6379 --token <token> [--max-body-bytes N] [--latency-ms N]
//   [--allow-host NAME ...] [--allow-admin-commands]
//   [--max-record-bytes N] [--max-request-bytes N]   Upstash's limits, refused as Upstash does (platform-limits.ts)
// Flags fall back to PORT, REDIS_URL and UPSTASH_REDIS_REST_TOKEN. It answers loopback Host
// names only unless --allow-host names another, and refuses administrative commands
// (FLUSHALL, CONFIG, KEYS, ...) unless started with --allow-admin-commands: by name, and
// inside scripts through a Redis user of its own (restricted-user.ts; the --redis URL's
// login must be allowed ACL SETUSER).
import { parseArgs } from "node:util";
import { MAX_LATENCY_MS } from "./http.js";
import { DEFAULT_MAX_BODY_BYTES, startGateway } from "./server.js";

const USAGE =
  "usage: npm run gateway -- --token <token> [--port 8079] [--host 127.0.0.1] [--redis redis://127.0.0.1:6379] [--max-body-bytes N] [--latency-ms N] [--allow-host NAME ...] [--allow-admin-commands] [--max-record-bytes N] [--max-request-bytes N]";

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

function integer(value: string | undefined, name: string, fallback: number, max = Number.MAX_SAFE_INTEGER): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > max) fail(`${name} must be an integer from 0 to ${max}, got "${value}"`);
  return n;
}

let values: {
  [flag in
    | "port"
    | "host"
    | "redis"
    | "token"
    | "max-body-bytes"
    | "latency-ms"
    | "max-record-bytes"
    | "max-request-bytes"]?: string;
} & { "allow-host"?: string[]; "allow-admin-commands"?: boolean };
try {
  ({ values } = parseArgs({
    options: {
      port: { type: "string" },
      host: { type: "string" },
      redis: { type: "string" },
      token: { type: "string" },
      "max-body-bytes": { type: "string" },
      "latency-ms": { type: "string" },
      "allow-host": { type: "string", multiple: true },
      "allow-admin-commands": { type: "boolean" },
      "max-record-bytes": { type: "string" },
      "max-request-bytes": { type: "string" },
    },
    strict: true,
  }));
} catch (error) {
  fail((error as Error).message);
}

/** Upstash's limits, when given (positive integers). */
function platformLimits(): { maxRecordBytes?: number; maxRequestBytes?: number } {
  const positive = (flag: "max-record-bytes" | "max-request-bytes") => {
    const value = values[flag];
    if (value === undefined) return undefined;
    const n = integer(value, `--${flag}`, 0);
    if (n === 0) fail(`--${flag} must be at least 1`);
    return n;
  };
  return { maxRecordBytes: positive("max-record-bytes"), maxRequestBytes: positive("max-request-bytes") };
}

const token = values.token ?? process.env.UPSTASH_REDIS_REST_TOKEN;
if (!token) fail("A token is required: pass --token or set UPSTASH_REDIS_REST_TOKEN.");

const gateway = await startGateway({
  port: integer(values.port ?? process.env.PORT, "--port", 8079),
  host: values.host,
  redisUrl: values.redis ?? process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
  token,
  maxBodyBytes: integer(values["max-body-bytes"], "--max-body-bytes", DEFAULT_MAX_BODY_BYTES),
  latencyMs: integer(values["latency-ms"], "--latency-ms", 0, MAX_LATENCY_MS),
  allowedHosts: values["allow-host"],
  allowAdminCommands: values["allow-admin-commands"],
  ...platformLimits(),
});
console.log(`Upstash REST gateway listening on ${gateway.url}`);

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    gateway.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  });
}
