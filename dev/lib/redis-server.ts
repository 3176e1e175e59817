// Throw-away redis-server instances for the dev stack, tests and benchmarks (Debian's
// redis-server, installed on first use when missing).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { ensureDebianPackage } from "./debian-packages.ts";
import { canConnect, freePort } from "./net.ts";
import { markInTitle } from "./run-processes.ts";
import { eventually } from "./wait.ts";

export interface RedisServer {
  port: number;
  url: string;
  /** The running server's process id (it changes on restart). */
  readonly pid: number;
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
  /**
   * With dataDir: no append-only file, only the snapshots SAVE or BGSAVE write there (dump.rdb),
   * which a restart loads. A restart then comes back as of the last snapshot, losing every
   * write after it, as a failover to a replica that lagged behind does.
   */
  snapshotsOnly?: boolean;
  /** Clients must AUTH with it (handed over on stdin, so it never shows in the process list). */
  password?: string;
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  ensureDebianPackage("redis-server", "redis-server");
  const port = options.port ?? (await freePort());
  const args = ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--daemonize", "no", "--loglevel", "warning"];
  if (options.dataDir) {
    mkdirSync(options.dataDir, { recursive: true });
    // AOF with fsync every second: the dev stack keeps its sales across restarts.
    args.push("--dir", options.dataDir);
    args.push(...(options.snapshotsOnly ? ["--appendonly", "no"] : ["--appendonly", "yes", "--appendfsync", "everysec"]));
  } else {
    args.push("--appendonly", "no");
  }

  // "-" reads more configuration from stdin: the password, when there is one.
  args.unshift("-");
  let child: ChildProcess | undefined;
  const launch = async () => {
    const proc = spawn("redis-server", args, { stdio: ["pipe", "ignore", "inherit"] });
    child = proc;
    const title = markInTitle();
    proc.stdin?.end(
      [
        ...(options.password ? [`requirepass "${options.password}"`] : []),
        // Its title replaces its environment in /proc: the run's mark goes there (run-processes.ts).
        ...(title ? [`proc-title-template "{title} {listen-addr} {server-mode} ${title}"`] : []),
      ].join("\n"),
    );
    await eventually(`redis-server on port ${port}`, async () => {
      if (proc.exitCode !== null) throw new Error(`redis-server exited (${proc.exitCode}) before it listened on port ${port}`);
      return canConnect(port);
    });
  };
  const stopWith = (signal: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      const proc = child;
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once("exit", () => resolve());
      proc.kill(signal);
    });

  await launch();
  const auth = options.password ? `:${encodeURIComponent(options.password)}@` : "";
  return {
    port,
    url: `redis://${auth}127.0.0.1:${port}`,
    get pid() {
      return child?.pid as number;
    },
    stop: () => stopWith("SIGTERM"),
    restart: launch,
    kill: () => stopWith("SIGKILL"),
  };
}
