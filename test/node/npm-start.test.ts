// `npm start` as a user meets it: started, killed hard (kill -9, as an OOM kill or a crashed
// terminal would), started again. The real thing runs: dev/start.ts with redis-server, the
// gateway and wrangler dev, on free ports and a state directory of its own.
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createConnection, createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { canConnect, freePort, requestAsHost } from "../../dev/lib/net.ts";
import { ROOT } from "../../dev/lib/project.ts";
import { eventually } from "../../dev/lib/wait.ts";
import type { StackRecord } from "../../dev/stack/stack-record.ts";
import {
  demoDrawSaleId,
  demoPresale,
  demoSaleId,
  type NpmStartRun,
  npmStart,
  stackApi,
  stackSecrets,
  stopNpmStart,
} from "../support/npm-start.ts";

const stateDir = mkdtempSync(path.join(tmpdir(), "npm-start-"));
const ports = { WORKER_PORT: 0, GATEWAY_PORT: 0, REDIS_PORT: 0, BEACON_PORT: 0 };
const runs: ChildProcess[] = [];

function npmStartHere(env: Record<string, string> = {}): NpmStartRun {
  const run = npmStart(ports, stateDir, env);
  runs.push(run.child);
  return run;
}

const record = () => JSON.parse(readFileSync(path.join(stateDir, "stack.json"), "utf8")) as StackRecord;
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const api = () => stackApi(ports.WORKER_PORT, stateDir);

/** The first line redis-server answers to an inline command sent without AUTH. */
function redisAnswer(port: number, command: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(port, "127.0.0.1", () => socket.write(`${command}\r\n`));
    socket.once("data", (chunk: Buffer) => {
      socket.destroy();
      resolve(chunk.toString().split("\r\n")[0] as string);
    });
    socket.once("error", reject);
  });
}

afterAll(async () => {
  await Promise.all(runs.map((child) => stopNpmStart(child, stateDir)));
  rmSync(stateDir, { recursive: true, force: true });
});

describe("npm start", () => {
  it("survives kill -9: the next start stops the leftovers, the watchdog stops a lone orphan, and a taken port is named", async () => {
    for (const key of Object.keys(ports) as (keyof typeof ports)[]) ports[key] = await freePort();

    // 1. A first run, with Worker vars from the environment: no per-IP limit, and a request
    //    limit of 100 kB for Upstash, which its gateway enforces too.
    const first = npmStartHere({ IP_RATE_LIMIT: "0", REDIS_MAX_REQUEST_BYTES: "100000" });
    const { output: firstOutput } = await first.ready;
    expect(firstOutput).toContain("Flash-sale checkout is running");
    expect(firstOutput).toContain("Vars from the environment: REDIS_MAX_REQUEST_BYTES, IP_RATE_LIMIT");
    const saleId = demoSaleId(firstOutput);
    const occurrences = (text: string) => firstOutput.split(text).length - 1;
    // What a shop owner opens comes first, before any token; wrangler's warning that scheduled
    // Workers do not run locally is left out (npm start runs the cron, and says so).
    const base = `http://127.0.0.1:${ports.WORKER_PORT}`;
    const opens = [`Storefront   ${base}/?sale=${saleId}`, `Console      ${base}/admin/`, `API docs     ${base}/docs`];
    for (const line of opens) expect(firstOutput).toContain(line);
    expect(opens.map((line) => firstOutput.indexOf(line))).toEqual(
      opens.map((line) => firstOutput.indexOf(line)).sort((a, b) => a - b),
    );
    expect(firstOutput.indexOf(opens[2] as string)).toBeLessThan(firstOutput.indexOf("Admin token"));
    expect(firstOutput).not.toContain("Scheduled Workers are not automatically triggered");
    expect(firstOutput).toContain("npm start runs the Worker's every-minute jobs itself");
    const statuses = await Promise.all(
      Array.from({ length: 60 }, () =>
        api()
          .fetch(`/api/sales/${saleId}`)
          .then((r) => r.status),
      ),
    );
    expect(statuses.filter((s) => s === 429)).toEqual([]); // 60 at once: over the default 20/s, burst 40
    const buyer = await api().checkout(saleId, await api().userToken("survivor"), 1, "eu-42");
    expect(buyer.status).toBe(202);

    // The demo draw: in the catalog like any sale, printed in a shop owner's words, its entries
    // open now, its beacon's round (on the local stand-in) published after the close.
    const drawId = demoDrawSaleId(firstOutput);
    const view = (await api().draw(drawId)).body;
    expect(view).toMatchObject({ state: "open", entries: 0, seed: null });
    const closes = new Date(view?.closesAt as string);
    expect(closes.getTime() - Date.now()).toBeGreaterThan(9 * 60_000);
    const closeInWords = closes.toLocaleTimeString([], { hour: "numeric", minute: "2-digit" });
    expect(firstOutput).toContain(`A draw       ${base}/?sale=${drawId}`);
    expect(firstOutput).toContain(`enter before ${closeInWords}`);
    expect((await api().catalog()).sales.map((s) => s.id)).toContain(drawId);
    const beacon = view?.beacon as { url: string; round: number };
    const info = (await (await fetch(`${beacon.url}/info`)).json()) as { period: number; genesis_time: number };
    expect((info.genesis_time + info.period * (beacon.round - 1)) * 1000).toBeGreaterThan(closes.getTime());
    expect((await api().enterDraw(drawId, await api().userToken("entrant"), { variant: "eu-42" })).status).toBe(201);

    // The demo presale: its members' lane open now, the public start about ten minutes on, and
    // the members' code printed once; the code buys in the lane (which the sale view shows),
    // and nobody buys without one.
    const presale = demoPresale(firstOutput);
    const presaleView = await api().sale(presale.saleId);
    expect(presaleView.status).toBe("upcoming");
    expect(presaleView.lanes).toEqual([{ name: "members", startsAt: expect.any(String), stock: 8, remaining: 8 }]);
    expect(Date.parse(presaleView.lanes[0]?.startsAt as string)).toBeLessThanOrEqual(Date.now());
    expect(Date.parse(presaleView.startsAt) - Date.now()).toBeGreaterThan(9 * 60_000);
    const everyone = new Date(presaleView.startsAt).toLocaleTimeString([], { hour: "numeric", minute: "2-digit" });
    expect(firstOutput).toContain(`A presale    ${base}/?sale=${presale.saleId}`);
    expect(firstOutput).toContain(`Members' code  ${presale.code} (lane open until ${everyone})`);
    expect(occurrences(presale.code)).toBe(1);
    const member = await api().userToken("member");
    expect((await api().checkout(presale.saleId, member, 1, "eu-42")).code).toBe("ACCESS_CODE_REQUIRED");
    expect((await api().checkoutWithCode(presale.saleId, member, presale.code, 1, "eu-42")).status).toBe(202);
    await eventually(
      "the members' lane to count the pair (the sale's read is cached for half a second)",
      async () => (await api().sale(presale.saleId)).lanes[0]?.remaining === 7,
    );

    // Its exposure: random secrets of its own, printed; the Worker and the gateway answer
    // loopback Host names only (DNS rebinding); no administrative commands; Redis wants AUTH.
    const stored = stackSecrets(stateDir);
    expect(new Set(Object.values(stored)).size).toBe(Object.keys(stored).length); // each its own
    for (const value of Object.values(stored)) expect(value.length).toBeGreaterThanOrEqual(32);
    // The admin token and a buyer's token, once each; the other secrets stay in the file it names.
    expect(firstOutput).toContain(`Admin token  ${stored.ADMIN_TOKEN}`);
    expect(occurrences(stored.ADMIN_TOKEN)).toBe(1);
    const buyerToken = /TOKEN=(\S+)/.exec(firstOutput)?.[1] as string;
    expect((await api().fetch("/api/orders", { headers: { Authorization: `Bearer ${buyerToken}` } })).status).toBe(200);
    expect(occurrences(buyerToken)).toBe(1);
    for (const name of [
      "JWT_SECRET",
      "GATEWAY_TOKEN",
      "REDIS_PASSWORD",
      "PAYMENT_WEBHOOK_SECRET",
      "ORDER_EVENT_SECRETS_KEY",
      "ORDER_ID_KEY",
    ] as const) {
      expect(occurrences(stored[name]), name).toBe(0);
    }
    expect(firstOutput).toContain(`${path.relative(ROOT, path.join(stateDir, "secrets.json"))}; local use only`);
    const admin = { Authorization: `Bearer ${stored.ADMIN_TOKEN}` };
    const report = `/admin/sales/${saleId}/report`;
    expect(
      (await requestAsHost(ports.WORKER_PORT, `localhost:${ports.WORKER_PORT}`, { path: report, headers: admin })).status,
    ).toBe(200);
    const rebound = await requestAsHost(ports.WORKER_PORT, `rebound.example:${ports.WORKER_PORT}`, {
      path: report,
      headers: admin,
    });
    expect(rebound.status).toBe(403);
    expect(JSON.parse(rebound.text)).toEqual({ error: { code: "HOST_NOT_ALLOWED", message: expect.any(String) } });
    const gateway = { method: "POST", headers: { authorization: `Bearer ${stored.GATEWAY_TOKEN}` } };
    expect((await requestAsHost(ports.GATEWAY_PORT, "rebound.example", { ...gateway, body: '["PING"]' })).status).toBe(403);
    const flush = await requestAsHost(ports.GATEWAY_PORT, `127.0.0.1:${ports.GATEWAY_PORT}`, {
      ...gateway,
      body: '["FLUSHALL"]',
    });
    expect(flush.status).toBe(400);
    // Inside a script too: Redis itself denies the gateway's user KEYS and FLUSHALL.
    for (const script of ["return #redis.call('KEYS','*')", "return redis.call('FLUSHALL')"]) {
      const inScript = await requestAsHost(ports.GATEWAY_PORT, `127.0.0.1:${ports.GATEWAY_PORT}`, {
        ...gateway,
        body: JSON.stringify(["EVAL", script, "0"]),
      });
      expect({ status: inScript.status, body: JSON.parse(inScript.text) }, script).toEqual({
        status: 400,
        body: { error: expect.stringMatching(/can't run this command|NOPERM/) },
      });
    }
    expect((await api().sale(saleId)).id).toBe(saleId); // nothing flushed
    // The cron: wrangler's own trigger (GET /__scheduled, any Host, no token) is gone; what
    // answers is the Worker, which refuses a rebound name and has no such route. npm start
    // fires the cron through POST /admin/scheduled, with the admin token, on a loopback Host.
    const trigger = "/__scheduled?cron=*+*+*+*+*";
    const fromPage = await requestAsHost(ports.WORKER_PORT, "evil.example", { path: trigger });
    expect({ status: fromPage.status, body: JSON.parse(fromPage.text) }).toEqual({
      status: 403,
      body: { error: { code: "HOST_NOT_ALLOWED", message: expect.any(String) } },
    });
    const local = await requestAsHost(ports.WORKER_PORT, `127.0.0.1:${ports.WORKER_PORT}`, { path: trigger });
    expect(local.status).toBe(404);
    expect(local.text).not.toContain("Ran scheduled event");
    const cronRoute = { method: "POST", path: "/admin/scheduled", headers: admin };
    expect((await requestAsHost(ports.WORKER_PORT, "evil.example", cronRoute)).status).toBe(403);
    expect((await api().runScheduled()).status).toBe(204);
    // The gateway holds Redis to the Worker's Upstash limits: a body over REDIS_MAX_REQUEST_BYTES is refused as Upstash refuses it.
    const oversized = await requestAsHost(ports.GATEWAY_PORT, `127.0.0.1:${ports.GATEWAY_PORT}`, {
      ...gateway,
      body: JSON.stringify(["SET", "npm-start:oversized", "x".repeat(100_000)]),
    });
    expect({ status: oversized.status, body: JSON.parse(oversized.text) }).toEqual({
      status: 400,
      body: { error: "ERR max request size exceeded" },
    });
    expect(await redisAnswer(ports.REDIS_PORT, "PING")).toMatch(/^-NOAUTH/);

    // 2. kill -9 the run and its watchdog: wrangler, workerd, the gateway and Redis live on.
    const leftovers = record();
    process.kill(leftovers.owner.pid, "SIGKILL");
    for (const p of leftovers.processes.filter((p) => p.name === "watchdog")) process.kill(p.pid, "SIGKILL");
    await eventually("the killed run to exit", async () => first.child.exitCode !== null || first.child.signalCode !== null);
    expect(await canConnect(ports.WORKER_PORT)).toBe(true); // an orphan still serves the old Worker

    // 3. The next run stops them, starts its own stack on the same state and serves it.
    const second = npmStartHere();
    const { output: secondOutput, exitCode } = await second.ready;
    expect(exitCode).toBeNull();
    expect(secondOutput).toMatch(/Stopped what a previous npm start left running: .*wrangler dev \(PID \d+\)/);
    for (const p of leftovers.processes) expect(alive(p.pid), `${p.name} (PID ${p.pid}) still runs`).toBe(false);
    expect(demoSaleId(secondOutput)).toBe(saleId); // same state: the same demo sale, with its order
    // The same draw, its entries still open, with the entry; the beacon at the same URL, with the same rounds.
    expect(demoDrawSaleId(secondOutput)).toBe(drawId);
    // The same presale, its lane still open, with a fresh code that buys for another member.
    const presaleAgain = demoPresale(secondOutput);
    expect(presaleAgain.saleId).toBe(presale.saleId);
    expect(presaleAgain.code).not.toBe(presale.code);
    const another = await api().checkoutWithCode(
      presale.saleId,
      await api().userToken("member-2"),
      presaleAgain.code,
      1,
      "eu-43",
    );
    expect(another.status).toBe(202);
    expect((await api().myEntry(drawId, await api().userToken("entrant"))).body?.status).toBe("entered");
    expect(await (await fetch(`${beacon.url}/info`)).json()).toEqual(info);
    const again = await api().checkout(saleId, await api().userToken("survivor"), 1, "eu-43");
    expect(again.code).toBe("ALREADY_PURCHASED");

    // 4. A second npm start beside a live one refuses, naming it.
    const third = await npmStartHere().ready;
    expect(third.exitCode).toBe(1);
    expect(third.output).toContain(`npm start is already running (PID ${second.child.pid})`);
    expect(third.output).not.toContain("Flash-sale checkout is running");

    // 5. kill -9 the run alone: its watchdog stops the stack within seconds.
    const running = record();
    second.child.kill("SIGKILL");
    await eventually(
      "the watchdog to stop the orphaned stack",
      async () => running.processes.every((p) => !alive(p.pid)),
      15_000,
    );
    expect(await canConnect(ports.WORKER_PORT)).toBe(false);

    // 6. A port something else holds: refused with its PID, never "running".
    const squatter: Server = createServer();
    await new Promise<void>((resolve) => squatter.listen(ports.WORKER_PORT, "127.0.0.1", resolve));
    try {
      const blocked = await npmStartHere().ready;
      expect(blocked.exitCode).toBe(1);
      expect(blocked.output).toContain(`port ${ports.WORKER_PORT} (WORKER_PORT) is taken by PID ${process.pid}`);
      expect(blocked.output).not.toContain("Flash-sale checkout is running");
    } finally {
      await new Promise((resolve) => squatter.close(resolve));
    }
  }, 240_000);
});
