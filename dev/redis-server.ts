// Throw-away redis-server instances for the dev stack, tests and benchmarks.
// Debian's redis-server is the only Redis here; when it is missing and we are root
// we install it, otherwise we say exactly how to.
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { createServer, Socket } from "node:net";

const REDIS_INSTALL_HINT = "sudo apt-get update && sudo apt-get install -y redis-server";

export interface RedisServer {
  port: number;
  url: string;
  /** Stops the server; resolves once the process has exited. */
  stop(): Promise<void>;
  /** Starts it again on the same port and data dir (for outage tests). */
  restart(): Promise<void>;
  /** Kills the server with SIGKILL, as a crash would (no shutdown save); resolves once it has exited. */
  kill(): Promise<void>;
}

export interface RedisServerOptions {
  port?: number;
  /** Directory for appendonly/rdb files; omit for a memory-only instance. */
  dataDir?: string;
}

function hasBinary(name: string): boolean {
  try {
    execFileSync("sh", ["-c", `command -v ${name}`], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

export function ensureRedisInstalled(): void {
  if (hasBinary("redis-server")) return;
  if (process.getuid?.() !== 0) {
    throw new Error(`redis-server is not installed. Install it with:\n  ${REDIS_INSTALL_HINT}`);
  }
  console.error("redis-server missing; installing it with apt-get (one time)...");
  execFileSync("sh", ["-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server"], {
    stdio: "inherit",
  });
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      const port = typeof addr === "object" && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.connect(port, "127.0.0.1");
  });
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  ensureRedisInstalled();
  const port = options.port ?? (await freePort());
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--daemonize", "no", "--loglevel", "warning"];
  if (options.dataDir) {
    mkdirSync(options.dataDir, { recursive: true });
    // AOF with fsync every second: the dev stack keeps its sales across restarts.
    args.push("--dir", options.dataDir, "--appendonly", "yes", "--appendfsync", "everysec");
  } else {
    args.push("--appendonly", "no");
  }

  let child: ChildProcess | undefined;
  const launch = async () => {
    child = spawn("redis-server", args, { stdio: ["ignore", "ignore", "inherit"] });
    await waitFor(() => canConnect(port), `redis-server on port ${port}`);
  };
  const stopWith = (signal: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      const proc = child;
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once("exit", () => resolve());
      proc.kill(signal);
    });

  await launch();
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    stop: () => stopWith("SIGTERM"),
    restart: launch,
    kill: () => stopWith("SIGKILL"),
  };
}
