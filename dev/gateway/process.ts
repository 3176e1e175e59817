// Runs the gateway as a child process (as `npm start` and the Worker test suite do), so
// it stays out of the caller's module graph and can be stopped like any other server.
import { type ChildProcess, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildSync } from "esbuild";
import { cached } from "../lib/build-cache.ts";
import { freePort } from "../lib/net.ts";
import type { GatewayStats } from "./server.ts";

export interface GatewayProcess {
  url: string;
  /** The bearer token clients send. */
  token: string;
  pid: number;
  stats(): Promise<GatewayStats>;
  resetStats(): Promise<void>;
  /** Sets the emulated round trip added to every request (see GatewayOptions.latencyMs). */
  setLatency(ms: number): Promise<void>;
  stop(): Promise<void>;
}

const MAIN = fileURLToPath(new URL("./main.ts", import.meta.url));

let script: string | undefined;

/**
 * The gateway as one JavaScript file, built by esbuild once per process and kept once per
 * content (named by a hash of the build, so a change to anything it bundles makes a new one):
 * run through tsx, each gateway spent half a CPU-second compiling its TypeScript before it
 * listened, and the test suite starts dozens beside its crowds (built: a fifth of a second).
 * Packages stay imports, found from node_modules/.cache as from anywhere in the project.
 */
function gatewayScript(): string {
  if (script) return script;
  const [built] = buildSync({
    entryPoints: [MAIN],
    outfile: "gateway.mjs",
    write: false,
    bundle: true,
    packages: "external",
    platform: "node",
    format: "esm",
    target: `node${process.versions.node}`,
    logLevel: "error",
  }).outputFiles;
  if (!built) throw new Error("esbuild built no gateway script");
  const name = `gateway-${createHash("sha256").update(built.contents).digest("hex").slice(0, 16)}`;
  script = path.join(
    cached(name, (dir) => writeFileSync(path.join(dir, "gateway.mjs"), built.contents)),
    "gateway.mjs",
  );
  return script;
}

export async function spawnGateway(opts: {
  redisUrl: string;
  token: string;
  port?: number;
  /** Runs administrative commands (FLUSHALL, CONFIG, ...), which the gateway refuses by default. */
  allowAdminCommands?: boolean;
  /** Upstash's limits, refused as Upstash does (GatewayOptions). */
  maxRecordBytes?: number;
  maxRequestBytes?: number;
}): Promise<GatewayProcess> {
  const port = opts.port ?? (await freePort());
  const child: ChildProcess = spawn(
    process.execPath,
    [
      gatewayScript(),
      "--port",
      String(port),
      "--redis",
      opts.redisUrl,
      ...(opts.allowAdminCommands ? ["--allow-admin-commands"] : []),
      ...(opts.maxRecordBytes === undefined ? [] : ["--max-record-bytes", String(opts.maxRecordBytes)]),
      ...(opts.maxRequestBytes === undefined ? [] : ["--max-request-bytes", String(opts.maxRequestBytes)]),
    ],
    {
      env: { ...process.env, UPSTASH_REDIS_REST_TOKEN: opts.token },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  await new Promise<void>((resolve, reject) => {
    child.once("exit", (code) => reject(new Error(`gateway exited with code ${code} before it listened`)));
    child.stdout?.on("data", (chunk: Buffer) => {
      if (chunk.toString().includes("listening")) resolve();
    });
  });
  child.stdout?.resume();
  const url = `http://127.0.0.1:${port}`;
  const statsRequest = (path: string, method: string) =>
    fetch(`${url}/__gateway/${path}`, { method, headers: { Authorization: `Bearer ${opts.token}` } });
  return {
    url,
    token: opts.token,
    pid: child.pid as number,
    stats: async () => (await (await statsRequest("stats", "GET")).json()) as GatewayStats,
    resetStats: async () => {
      await (await statsRequest("stats/reset", "POST")).arrayBuffer();
    },
    setLatency: async (ms) => {
      const res = await statsRequest(`latency?ms=${ms}`, "POST");
      if (!res.ok) throw new Error(`gateway latency: ${res.status} ${await res.text()}`);
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}
