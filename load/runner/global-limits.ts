// What the abuse defences cost in Redis, counted at the gateway: a route with the global
// limits (a sliding window) for callers it admits and callers it has blocked, and the polls
// of quiet tickets (bots turned away at a queue join). test/node/global-limits.test.ts asserts
// the figures; `npm run bench -- global-limits` prints them with the Worker's CPU beside.
import type { Stack } from "../../dev/stack/local-stack.ts";
import { measureCpu, stackProcesses } from "./cpu.ts";

export interface RouteCost {
  requests: number;
  /** Answered 200; the others were 429. */
  admitted: number;
  /** Gateway requests (Upstash round trips) the requests cost. */
  roundTrips: number;
  /** workerd's CPU over the requests (ms). */
  workerCpuMs: number;
  /** Other work took the cores while it was measured: the CPU figure is suspect. */
  interfered: boolean;
}

/**
 * `users` buyers read their orders (GET /api/orders, which reads D1 and nothing of Redis but
 * its limits) `perUser` times each, `width` at a time; every answer must be 200 or 429.
 */
export async function measureOrderReads(
  stack: Stack,
  { users, perUser, width = 20, tag }: { users: number; perUser: number; width?: number; tag: string },
): Promise<RouteCost> {
  const tokens = await Promise.all(Array.from({ length: users }, (_, i) => stack.api.userToken(`reader-${tag}-${i}`)));
  const requests = users * perUser;
  let admitted = 0;
  await stack.gateway.resetStats();
  const { cpu } = await measureCpu(stackProcesses(stack), async () => {
    for (let sent = 0; sent < requests; sent += width) {
      await Promise.all(
        Array.from({ length: Math.min(width, requests - sent) }, async (_, i) => {
          const res = await stack.api.myOrders(tokens[(sent + i) % users] as string);
          if (res.status !== 200 && res.status !== 429) throw new Error(`GET /api/orders answered ${res.status} ${res.code}`);
          if (res.status === 200) admitted++;
        }),
      );
    }
  });
  return {
    requests,
    admitted,
    roundTrips: (await stack.gateway.stats()).requests,
    workerCpuMs: cpu.cpuMs.workerd ?? 0,
    interfered: cpu.interfered,
  };
}

export interface QuietPollCost {
  bots: number;
  polls: number;
  roundTrips: number;
  elapsedMs: number;
  /** Units the bots hold once each tried to check out: must be 0. */
  unitsToBots: number;
}

/**
 * `bots` join a queued sale with the human check, in its line before the start: half with
 * tokens siteverify refuses, half with a user agent a deny rule names. Each gets a quiet
 * ticket; then `polls` polls of those tickets go out `width` at a time, and each bot tries to
 * check out without a pass. The stack's Worker has no TURNSTILE_SECRET_KEY, so every token is
 * refused. A quiet place the line has not reached costs a poll no Redis command, as a person's
 * does; one it has reached costs the read of a pass record, as a person's does (the same
 * commands, so the same timing).
 */
export async function measureQuietPolls(stack: Stack, { bots = 20, polls = 500, width = 50 } = {}): Promise<QuietPollCost> {
  const { api } = stack;
  const agent = "QuietBenchBot/1.0";
  const rule = await api.fetch("/admin/deny-rules", {
    method: "POST",
    headers: { Authorization: `Bearer ${stack.secrets.ADMIN_TOKEN}`, "Content-Type": "application/json" },
    body: JSON.stringify({ kind: "user-agent", value: agent, note: "quiet polls bench" }),
  });
  if (rule.status !== 201) throw new Error(`deny rule: ${rule.status}`);
  const stock = 10;
  const startsAt = Date.now() + 600_000;
  const sale = await api.createSale({
    name: "quiet polls",
    stock,
    humanCheck: true,
    startsAt: new Date(startsAt).toISOString(),
    endsAt: new Date(startsAt + 3_600_000).toISOString(),
    queue: { mode: "fifo", admitPerSec: 1000 },
  });
  const joined = await Promise.all(
    Array.from({ length: bots }, async (_, i) => {
      const token = await api.userToken(`quiet-bot-${sale.id}-${i}`);
      const headers = {
        Authorization: `Bearer ${token}`,
        "Human-Check": `bot-token-${i}`,
        ...(i % 2 === 0 && { "User-Agent": agent }),
      };
      const res = await api.fetch(`/api/sales/${sale.id}/queue`, { method: "POST", headers });
      if (res.status !== 200) throw new Error(`a bot's join answered ${res.status}`);
      return { token, headers, ticket: ((await res.json()) as { ticket: string }).ticket };
    }),
  );
  await new Promise((r) => setTimeout(r, 2_500)); // the create's second eviction
  await stack.gateway.resetStats();
  const started = performance.now();
  for (let sent = 0; sent < polls; sent += width) {
    await Promise.all(
      Array.from({ length: Math.min(width, polls - sent) }, async (_, i) => {
        const bot = joined[(sent + i) % bots] as (typeof joined)[number];
        const res = await api.pollQueue(sale.id, bot.token, bot.ticket);
        if (res.status !== 200 || res.body?.pass) throw new Error(`a bot's poll answered ${res.status} ${res.body?.state}`);
      }),
    );
  }
  const elapsedMs = performance.now() - started;
  const roundTrips = (await stack.gateway.stats()).requests;
  for (const bot of joined) {
    const res = await api.fetch(`/api/sales/${sale.id}/checkout`, { method: "POST", headers: bot.headers });
    if (res.status === 202) throw new Error("a bot bought a unit");
  }
  const { remaining } = await api.sale(sale.id);
  return { bots, polls, roundTrips, elapsedMs, unitsToBots: stock - (remaining ?? stock) };
}
