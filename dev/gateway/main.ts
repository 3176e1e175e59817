// CLI: npm run gateway -- --port 8079 --redis redis://127.0.0.1:6379 --token <token> [--max-body-bytes N] [--latency-ms N]
// Flags fall back to PORT, REDIS_URL and UPSTASH_REDIS_REST_TOKEN.
import { parseArgs } from "node:util";
import { DEFAULT_MAX_BODY_BYTES, startGateway } from "./server.js";

const USAGE =
  "usage: npm run gateway -- --token <token> [--port 8079] [--host 127.0.0.1] [--redis redis://127.0.0.1:6379] [--max-body-bytes N] [--latency-ms N]";

function fail(message: string): never {
  console.error(`${message}\n${USAGE}`);
  process.exit(2);
}

function integer(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) fail(`${name} must be a non-negative integer, got "${value}"`);
  return n;
}

let values: Record<string, string | undefined>;
try {
  ({ values } = parseArgs({
    options: {
      port: { type: "string" },
      host: { type: "string" },
      redis: { type: "string" },
      token: { type: "string" },
      "max-body-bytes": { type: "string" },
      "latency-ms": { type: "string" },
    },
    strict: true,
  }));
} catch (error) {
  fail((error as Error).message);
}

const token = values.token ?? process.env.UPSTASH_REDIS_REST_TOKEN;
if (!token) fail("A token is required: pass --token or set UPSTASH_REDIS_REST_TOKEN.");

const gateway = await startGateway({
  port: integer(values.port ?? process.env.PORT, "--port", 8079),
  host: values.host,
  redisUrl: values.redis ?? process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
  token,
  maxBodyBytes: integer(values["max-body-bytes"], "--max-body-bytes", DEFAULT_MAX_BODY_BYTES),
  latencyMs: integer(values["latency-ms"], "--latency-ms", 0),
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
