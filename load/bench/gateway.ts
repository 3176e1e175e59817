// Gateway throughput: this gateway vs @humanwhocodes/upstash-redis-server (the npm
// alternative) vs raw RESP, on one redis-server, with the request mix @upstash/redis sends.
//
//   npm run bench:gateway -- [--duration 8] [--connections 50] [--json]
//
// Each HTTP target runs in a process of its own and is driven by autocannon with POST
// /pipeline single-command bodies and `Upstash-Encoding: base64` (what the client sends
// with auto-pipelining on), rotating GET / SET / EVALSHA. Raw RESP is ioredis with the
// same number of commands in flight: the ceiling no HTTP gateway can reach. "this gateway,
// Upstash's limits enforced" is the same gateway started as npm start starts it, with the
// Worker's REDIS_MAX_RECORD_BYTES and REDIS_MAX_REQUEST_BYTES: every SET and EVALSHA of the
// mix costs it a MEMORY USAGE of its key first (dev/gateway/platform-limits.ts).
import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { freePort } from "../../dev/lib/net.ts";
import { ROOT } from "../../dev/lib/project.ts";
import { startRedisServer } from "../../dev/lib/redis-server.ts";

interface AutocannonRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}
interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}
type Autocannon = (options: {
  url: string;
  connections: number;
  duration: number;
  requests: AutocannonRequest[];
}) => Promise<AutocannonResult>;
// autocannon ships no types; this is the part of its API used here.
const autocannon = createRequire(import.meta.url)("autocannon") as Autocannon;

interface Figures {
  target: string;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  note?: string;
}

const TOKEN = "bench-token";
const SCRIPT = "return redis.call('INCR', KEYS[1])";
const WARMUP_SECONDS = 1;

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "8" },
    connections: { type: "string", default: "50" },
    json: { type: "boolean", default: false },
  },
});
const duration = Number(values.duration);
const connections = Number(values.connections);
const log = (line: string) => {
  if (!values.json) console.log(line);
};

/** The three commands of the mix, as argument arrays. */
function mix(sha: string): string[][] {
  return [
    ["GET", "bench:key"],
    ["SET", "bench:key", "a value of some thirty bytes.."],
    ["EVALSHA", sha, "1", "bench:counter"],
  ];
}

function httpRequests(sha: string): AutocannonRequest[] {
  return mix(sha).map((command) => ({
    method: "POST",
    path: "/pipeline",
    headers: {
      authorization: `Bearer ${TOKEN}`,
      "content-type": "application/json",
      "upstash-encoding": "base64",
    },
    body: JSON.stringify([command]),
  }));
}

/** Starts a server process in its own process group and waits until it answers. */
async function startProcess(args: string[], env: Record<string, string>, port: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/`, {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}` },
        body: '["PING"]',
      });
      if (res.ok) return child;
    } catch {
      // Not listening yet.
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      stopProcess(child);
      throw new Error(`${args.join(" ")} did not start`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

function stopProcess(child: ChildProcess): void {
  if (child.pid === undefined || child.exitCode !== null) return;
  try {
    process.kill(-child.pid, "SIGTERM");
  } catch {
    // Already gone.
  }
}

/** Checks that a target answers the mix correctly before measuring it. */
async function check(port: number, requests: AutocannonRequest[]): Promise<{ base64: boolean }> {
  const bodies: unknown[] = [];
  for (const request of requests) {
    const res = await fetch(`http://127.0.0.1:${port}${request.path}`, { ...request });
    if (!res.ok) throw new Error(`${request.body} -> HTTP ${res.status}`);
    bodies.push(await res.json());
  }
  const [, set] = bodies as [unknown, [{ result: string }]];
  const counter = (bodies[2] as [{ result: unknown }])[0].result;
  if (typeof counter !== "number") throw new Error(`EVALSHA did not run: ${JSON.stringify(bodies[2])}`);
  return { base64: set[0].result === Buffer.from("OK").toString("base64") };
}

async function driveHttp(target: string, port: number, requests: AutocannonRequest[]): Promise<Figures> {
  const { base64 } = await check(port, requests);
  const url = `http://127.0.0.1:${port}`;
  await autocannon({ url, connections, duration: WARMUP_SECONDS, requests });
  const result = await autocannon({ url, connections, duration, requests });
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`${target}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`);
  }
  return {
    target,
    reqPerSec: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    note: base64 ? undefined : "ignores Upstash-Encoding: base64 (answers plain strings)",
  };
}

/** `connections` loops, each with one command in flight, for `seconds`. */
async function driveRaw(url: string, sha: string, seconds: number): Promise<Figures> {
  const redis = new Redis(url);
  const commands = mix(sha);
  const latencies: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  let turn = 0;
  const loop = async () => {
    while (performance.now() < deadline) {
      const [name, ...args] = commands[turn++ % commands.length] as string[];
      const started = performance.now();
      await redis.callBuffer(name as string, ...args);
      latencies.push(performance.now() - started);
    }
  };
  await Promise.all(Array.from({ length: connections }, loop));
  redis.disconnect();
  latencies.sort((a, b) => a - b);
  const at = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
  return { target: "raw RESP (ioredis)", reqPerSec: latencies.length / seconds, p50Ms: at(0.5), p99Ms: at(0.99) };
}

const redisServer = await startRedisServer();
const children: ChildProcess[] = [];
try {
  const admin = new Redis(redisServer.url);
  const sha = (await admin.script("LOAD", SCRIPT)) as string;
  await admin.set("bench:key", "initial");
  admin.disconnect();
  const requests = httpRequests(sha);

  log(`${connections} connections, ${duration} s per target, mix GET / SET / EVALSHA as POST /pipeline (base64)`);
  const driveGateway = async (target: string, flags: string[]) => {
    const port = await freePort();
    const args = ["--import", "tsx", "dev/gateway/main.ts", "--port", String(port), "--redis", redisServer.url, "--token", TOKEN];
    children.push(await startProcess([...args, ...flags], {}, port));
    const figures = await driveHttp(target, port, requests);
    stopProcess(children.pop() as ChildProcess);
    return figures;
  };
  const ours = await driveGateway("this gateway", []);
  const limited = await driveGateway("this gateway, Upstash's limits enforced", [
    "--max-record-bytes",
    "100000000",
    "--max-request-bytes",
    "10000000",
  ]);

  const altPort = await freePort();
  const altBin = join(ROOT, "node_modules/@humanwhocodes/upstash-redis-server/dist/server.js");
  children.push(await startProcess([altBin], { URS_TOKEN: TOKEN, PORT: String(altPort), REDIS_URL: redisServer.url }, altPort));
  const alternative = await driveHttp("@humanwhocodes/upstash-redis-server", altPort, requests);
  stopProcess(children.pop() as ChildProcess);

  await driveRaw(redisServer.url, sha, WARMUP_SECONDS);
  const rawResp = await driveRaw(redisServer.url, sha, duration);

  const rows = [ours, limited, alternative, rawResp].map((f) => ({
    ...f,
    vsAlternative: f.reqPerSec / alternative.reqPerSec,
    vsRaw: f.reqPerSec / rawResp.reqPerSec,
  }));
  if (values.json) {
    console.log(JSON.stringify({ connections, durationSeconds: duration, results: rows }));
  } else {
    const table = rows.map((r) => ({
      target: r.target,
      "req/s": Math.round(r.reqPerSec),
      "p50 ms": Number(r.p50Ms.toFixed(2)),
      "p99 ms": Number(r.p99Ms.toFixed(2)),
      "x alternative": Number(r.vsAlternative.toFixed(2)),
      "x raw": Number(r.vsRaw.toFixed(2)),
    }));
    console.table(table);
    for (const r of rows) if (r.note) console.log(`note: ${r.target} ${r.note}`);
  }
} finally {
  for (const child of children) stopProcess(child);
  await redisServer.stop();
}
