// How an action is counted: on a stack started with countingVars() and the meter
// (load/runner/meter.ts), from a quiet stack to a quiet stack, so everything the action set
// off (its queue messages, their consumers, its timers) is in its count, and nothing before it.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Redis as IORedis } from "ioredis";
import { ApiClient, type SaleInput } from "../../dev/lib/api-client.ts";
import { outboxSize } from "../../dev/lib/sale-buckets.ts";
import { eventually } from "../../dev/lib/wait.ts";
import type { Stack } from "../../dev/stack/local-stack.ts";
import { workerConfig } from "../../dev/stack/wrangler-cache.ts";
import type { AdminSaleView } from "../../src/shared/api-types.ts";
import { planCrowd, type Shot } from "../runner/crowd.ts";
import { type MeterReading, readMeter, resetMeter, type Tally, totalOf } from "../runner/meter.ts";
import { waitForSecondEvictions } from "../runner/round-trips.ts";
import { type Counts, countsOf, type GatewayCounts, scriptNames } from "./counts.ts";

/**
 * The vars the counting stack runs with: production's (wrangler.toml), with the global
 * per-address limits on again (the local stack turns them off for crowds from one address;
 * here every request comes from an address of its own), the lab for the design card, and
 * loopback hosts for the order events' local endpoint.
 */
export function countingVars(): Record<string, string> {
  const production = workerConfig().vars as Record<string, string>;
  const perAddress = Object.fromEntries(Object.entries(production).filter(([name]) => /_PER_IP_/.test(name)));
  return { ...perAddress, IP_RATE_LIMIT: production.IP_RATE_LIMIT as string, LAB_ENABLED: "true", LOOPBACK_HOSTS_ONLY: "true" };
}

/** How long the meter must read the same before an action counts as finished. */
const QUIET_MS = 2_000;
/** A liveness bound on any one wait, for two cores other work keeps busy. */
export const SETTLE_BOUND_MS = 120_000;

/** Waits until nothing runs and nothing changed for `quietMs`: every message delivered, every timer fired. */
async function settle(stack: Stack, quietMs: number): Promise<MeterReading> {
  let last = "";
  let since = Date.now();
  const deadline = Date.now() + SETTLE_BOUND_MS;
  for (;;) {
    const reading = await readMeter(stack);
    const seen = JSON.stringify(reading.byKind);
    if (seen !== last || reading.inFlight > 0) {
      last = seen;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) return reading;
    if (Date.now() > deadline) throw new Error("the stack did not settle: something kept running");
    await new Promise((r) => setTimeout(r, 100));
  }
}

export interface Measured {
  total: Tally;
  byKind: Record<string, Tally>;
  gateway: GatewayCounts;
}

export interface MeasureOptions {
  /** Waited for after the work, before the stack must settle (a job due later, a delivery). */
  until?: () => Promise<boolean>;
  /** Runs once the stack settled, not counted: what the isolate must know first (its follow-ups are counted with the work's). */
  before?: () => Promise<void>;
}

/** What the actions are counted with. */
export interface Counting {
  stack: Stack;
  /** The API, every request from an address of its own, as production's crowds come. */
  api: ApiClient;
  /** Redis directly, past the gateway (which is counting). */
  redis: IORedis;
  /** A query's rows from local D1, through the stack's D1 (its batch: a promise, never a call that blocks Node). */
  rows<T>(sql: string, ...params: unknown[]): Promise<T[]>;
  /** `n` new buyers with tokens. */
  users(prefix: string, n: number): Promise<Shot[]>;
  /** Counts `work` and everything it set off. */
  measure(work: () => Promise<void>, options?: MeasureOptions): Promise<Measured>;
  /** A measurement as counts (and kept for the cross-check of the gateway against the meter). */
  counted(measured: Measured): Counts;
  /** A tally (one kind of invocation's) as counts. */
  countsOf(tally: Tally): Counts;
  /** Fails the counting when `ok` is not. */
  expect(what: string, ok: boolean): void;
  /** Whether a sale's accepted orders are all settled (its outbox empty). */
  settled(saleId: string): () => Promise<boolean>;
  /** Creates sales and waits until their cached pages' second evictions are past (a round trip of their own). */
  createSales(...inputs: Partial<SaleInput>[]): Promise<AdminSaleView[]>;
  /** The gateway's and the meter's Upstash commands over every measurement so far. */
  crossCheck(): { gatewayCommands: number; meterCommands: number };
  close(): void;
}

/** Counting on `stack`; a shorter `quietMs` for a run whose figures are not read (the bench's smallest form). */
export async function counting(stack: Stack, quietMs = QUIET_MS): Promise<Counting> {
  const names = scriptNames();
  let sent = 0;
  const api = new ApiClient({
    fetch: (pathname, init) => {
      const n = sent++;
      const headers = new Headers(init?.headers);
      headers.set("CF-Connecting-IP", `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`);
      return stack.worker.fetch(pathname, { ...init, headers });
    },
    adminToken: stack.secrets.ADMIN_TOKEN,
    jwtSecret: stack.secrets.JWT_SECRET,
  });
  const redis = new IORedis(stack.redis.url);
  const tag = Date.now().toString(36);
  let gatewayCommands = 0;
  let meterCommands = 0;
  return {
    stack,
    api,
    redis,
    rows: <T>(sql: string, ...params: unknown[]) => stack.worker.query<T>(sql, ...params),
    users: (prefix, n) => planCrowd(api, n, 1, `cost-${tag}-${prefix}-`),
    async measure(work, { until, before } = {}) {
      await settle(stack, quietMs);
      await before?.();
      await resetMeter(stack);
      await stack.gateway.resetStats();
      await work();
      if (until) await eventually("the action's follow-up work", until, SETTLE_BOUND_MS);
      const reading = await settle(stack, quietMs);
      return { total: totalOf(reading), byKind: reading.byKind, gateway: await stack.gateway.stats() };
    },
    counted(m) {
      gatewayCommands += m.gateway.commands;
      meterCommands += m.total.upstash.commands;
      return countsOf(m.total, names, m.gateway);
    },
    countsOf: (tally) => countsOf(tally, names),
    expect(what, ok) {
      if (!ok) throw new Error(`counting: ${what}`);
    },
    settled: (saleId) => async () => (await outboxSize(redis, saleId)) === 0,
    async createSales(...inputs) {
      const sales = await Promise.all(inputs.map((input) => api.createSale(input)));
      await waitForSecondEvictions(
        redis,
        sales.map((sale) => sale.id),
      );
      return sales;
    },
    crossCheck: () => ({ gatewayCommands, meterCommands }),
    close: () => redis.disconnect(),
  };
}

/** `n` sends from one isolate in WAVES waves a second apart; returns the seconds they took. */
export async function inWaves(n: number, send: (i: number) => Promise<void>): Promise<number> {
  const started = performance.now();
  const size = Math.ceil(n / WAVES);
  for (let wave = 0; wave < WAVES; wave++) {
    const waveStarted = performance.now();
    await Promise.all(Array.from({ length: size }, (_, i) => send(wave * size + i)));
    await new Promise((r) => setTimeout(r, Math.max(0, 1_000 - (performance.now() - waveStarted))));
  }
  return (performance.now() - started) / 1000;
}

const WAVES = 3;

/** An endpoint for order events: answers 204 to each delivery and counts them. */
export async function eventReceiver(): Promise<{ url: string; received(): number; close(): Promise<void> }> {
  let received = 0;
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      received++;
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`,
    received: () => received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
