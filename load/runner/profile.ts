// A V8 CPU profile of the Worker while some work runs, through workerd's inspector (the
// Chrome DevTools protocol), summed by module of the Worker's source and by function: where
// a request's CPU goes inside the isolate. The stack must run with an inspector port and an
// unminified bundle (StackOptions.inspectorPort), so names and the bundle's module comments
// survive; V8 runs the same code either way.
import { readFileSync } from "node:fs";
import WebSocket from "ws";

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileLine {
  name: string;
  /** Self time per unit of work (ms): time spent in this place itself. */
  selfMs: number;
  /** Share of all sampled time, idle excluded. */
  share: number;
}

export interface ProfileSummary {
  /** Sampled busy time per unit of work (ms), idle excluded. */
  busyMs: number;
  /** Self time by module of the Worker's bundle (src/..., node_modules/hono/..., or the runtime's). */
  byModule: ProfileLine[];
  /** Self time by function, with its module. */
  byFunction: ProfileLine[];
}

/** Sends one command at a time over the inspector's WebSocket. */
export async function inspectorSession(inspectorPort: number) {
  const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json()) as {
    title?: string;
    webSocketDebuggerUrl: string;
  }[];
  // Miniflare's own workers (its entry, the assets router) are named "core:..."; the Worker is the other one.
  const target = targets.find((t) => !t.title?.startsWith("core:")) ?? targets[0];
  if (!target) throw new Error("the inspector lists no worker");
  const ws = new WebSocket(target.webSocketDebuggerUrl);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  let nextId = 0;
  const pending = new Map<number, (result: unknown) => void>();
  ws.on("message", (data) => {
    const message = JSON.parse(String(data)) as { id?: number; result?: unknown };
    if (message.id !== undefined) pending.get(message.id)?.(message.result);
  });
  return {
    send: <T>(method: string, params: object = {}) =>
      new Promise<T>((resolve) => {
        const id = ++nextId;
        pending.set(id, resolve as (result: unknown) => void);
        ws.send(JSON.stringify({ id, method, params }));
      }),
    close: () => ws.close(),
  };
}

/** The bundle's module boundaries: esbuild writes `// <path>` before each module when not minifying. */
function moduleLocator(bundlePath: string): (line: number) => string {
  const starts: { line: number; module: string }[] = [];
  readFileSync(bundlePath, "utf8")
    .split("\n")
    .forEach((text, line) => {
      // A worktree whose node_modules links elsewhere names them by a relative path (../main/node_modules/...).
      const m = /^\/\/ (?:\S*?\/)?((?:src|node_modules|lua)\/\S+)$/.exec(text);
      if (m) starts.push({ line, module: (m[1] as string).replace(/^node_modules\/(@[^/]+\/[^/]+|[^/]+)\/.*$/, "$1") });
    });
  return (line) => {
    let found = "(bundle)";
    for (const s of starts) {
      if (s.line > line) break;
      found = s.module;
    }
    return found;
  };
}

const RUNTIME = new Set(["(program)", "(garbage collector)", "(root)"]);

/** Profiles the Worker while `work` runs; figures are per unit of work (`units`, e.g. requests). */
export async function profileWorker(
  inspectorPort: number,
  bundlePath: string,
  units: number,
  work: () => Promise<unknown>,
): Promise<ProfileSummary> {
  const session = await inspectorSession(inspectorPort);
  try {
    await session.send("Profiler.enable");
    await session.send("Profiler.setSamplingInterval", { interval: 100 });
    await session.send("Profiler.start");
    await work();
    const { profile } = await session.send<{ profile: Profile }>("Profiler.stop");
    return summarize(profile, moduleLocator(bundlePath), units);
  } finally {
    session.close();
  }
}

function summarize(profile: Profile, moduleAt: (line: number) => string, units: number): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  // Each sample's time is the delta to the next one.
  profile.samples.forEach((id, i) => {
    const delta = profile.timeDeltas[i + 1] ?? 0;
    selfUs.set(id, (selfUs.get(id) ?? 0) + delta);
  });
  const modules = new Map<string, number>();
  const functions = new Map<string, number>();
  let busyUs = 0;
  for (const [id, us] of selfUs) {
    const frame = (byId.get(id) as ProfileNode).callFrame;
    if (frame.functionName === "(idle)") continue;
    busyUs += us;
    const module = RUNTIME.has(frame.functionName)
      ? frame.functionName
      : frame.url.endsWith(".js") && !frame.url.startsWith("cloudflare")
        ? moduleAt(frame.lineNumber)
        : "(runtime built-ins)";
    modules.set(module, (modules.get(module) ?? 0) + us);
    const fn = `${frame.functionName || "(anonymous)"} [${module}]`;
    functions.set(fn, (functions.get(fn) ?? 0) + us);
  }
  const lines = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .map(([name, us]) => ({ name, selfMs: us / 1000 / units, share: busyUs > 0 ? us / busyUs : 0 }));
  return { busyMs: busyUs / 1000 / units, byModule: lines(modules), byFunction: lines(functions) };
}
