// `npm start` (dev/start.ts) as a child process on ports and a state directory of the test's
// choosing: the real local stack a user gets, for the tests of npm start and the browser tests.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { ApiClient } from "../../dev/lib/api-client.ts";
import { ROOT } from "../../dev/lib/project.ts";
import type { LocalSecrets } from "../../dev/stack/local-secrets.ts";
import { StackRecordFile, stopProcesses } from "../../dev/stack/stack-record.ts";

export interface NpmStartRun {
  child: ChildProcess;
  /** Resolves with everything it printed once it said it is running, or exited. */
  ready: Promise<{ output: string; exitCode: number | null }>;
}

export interface StackPorts {
  WORKER_PORT: number;
  GATEWAY_PORT: number;
  REDIS_PORT: number;
  /** The local beacon's (dev/stack/local-beacon.ts). */
  BEACON_PORT: number;
}

export function npmStart(
  ports: StackPorts,
  stateDir: string,
  env: Record<string, string> = {},
  args: string[] = [],
): NpmStartRun {
  const child = spawn(process.execPath, ["--import", "tsx", path.join(ROOT, "dev/start.ts"), ...args], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
      STACK_STATE_DIR: stateDir,
      WRANGLER_SEND_METRICS: "false",
      CLOUDFLARE_CF_FETCH_ENABLED: "false",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const ready = new Promise<{ output: string; exitCode: number | null }>((resolve) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes("Flash-sale checkout is running")) resolve({ output, exitCode: null });
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => resolve({ output, exitCode: code }));
  });
  return { child, ready };
}

/**
 * Stops a run as Ctrl-C would (it stops its stack, then exits); one that has not exited after
 * `graceMs` is killed. Then whatever its record in `stateDir` still lists is stopped too: its
 * watchdog would, but only while the record exists, and the caller may remove the directory next.
 */
export async function stopNpmStart(child: ChildProcess, stateDir: string, graceMs = 20_000): Promise<void> {
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  if (!exited()) {
    const gone = new Promise<void>((resolve) => child.once("exit", () => resolve()));
    child.kill("SIGTERM");
    const timer = setTimeout(() => child.kill("SIGKILL"), graceMs);
    await gone;
    clearTimeout(timer);
  }
  await stopProcesses(new StackRecordFile(path.join(stateDir, "stack.json")).read()?.processes ?? []);
}

/** The demo sale npm start announced. */
export const demoSaleId = (output: string) => /Demo sale +(\d+)/.exec(output)?.[1] as string;

/** The demo draw npm start announced. */
export const demoDrawSaleId = (output: string) => /Demo draw +(\d+)/.exec(output)?.[1] as string;

/** The demo presale npm start announced, and the members' code it printed. */
export const demoPresale = (output: string) => ({
  saleId: /Demo presale +(\d+)/.exec(output)?.[1] as string,
  code: /Members' code +(\S+)/.exec(output)?.[1] as string,
});

/** The secrets a run keeps in its state directory. */
export const stackSecrets = (stateDir: string) =>
  JSON.parse(readFileSync(path.join(stateDir, "secrets.json"), "utf8")) as LocalSecrets;

/**
 * A request to `npm start`'s Worker, sent again (at most twice) when wrangler dev's own proxy
 * answers it with "Your worker restarted mid-request": wrangler 4.86's proxy now and then
 * sends a request on a kept-alive connection to the Worker that is being closed, and answers a
 * POST that way without the Worker having restarted (GET and HEAD it sends again itself). The
 * Worker answers in JSON, never in plain text, so none of its own answers is sent again.
 */
async function fetchThroughWranglerDev(url: string, init?: RequestInit): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    const res = await fetch(url, init);
    if (res.status !== 503 || attempt === 3 || !res.headers.get("Content-Type")?.startsWith("text/plain")) return res;
    if (!(await res.clone().text()).startsWith("Your worker restarted mid-request")) return res;
  }
}

/** The API of the run on `workerPort`, as an admin, minting user tokens it accepts. */
export function stackApi(workerPort: number, stateDir: string): ApiClient {
  const base = `http://127.0.0.1:${workerPort}`;
  const secrets = stackSecrets(stateDir);
  return new ApiClient({
    fetch: (p, init) => fetchThroughWranglerDev(`${base}${p}`, init),
    adminToken: secrets.ADMIN_TOKEN,
    jwtSecret: secrets.JWT_SECRET,
  });
}
