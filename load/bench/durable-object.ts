// The Durable Object peer side by side with atomic: the same crowd on the same harness, atomic,
// durable-object (one RPC per checkout) and durable-object-merged (the peer at its best:
// atomic's merging and isolate memo) alternating run by run, at two depths of requests in
// flight, on the bare stack and with an emulated distance: per RPC for the objects (the lab
// sale's objectHopMs; a merged RPC pays it once for its whole batch), per call for Upstash
// (the gateway's added round trip, likewise once per merged call). Each run's workerd CPU
// per request comes from /proc; oversold and duplicates from the lab, RPCs from the object.
import type { Stack } from "../../dev/stack/local-stack.ts";
import type { StrategyName } from "../../src/shared/lab-strategies.ts";
import { measureCpu, type Processes } from "../runner/cpu.ts";
import { drive, planCrowd, type Sample } from "../runner/crowd.ts";
import { labViolations } from "../runner/invariants.ts";
import { latencyFigures, summarize } from "../runner/stats.ts";
import { fixed, formatTable, seconds } from "../runner/table.ts";

const CONTENDERS = ["atomic", "durable-object", "durable-object-merged"] as const satisfies readonly StrategyName[];
type Contender = (typeof CONTENDERS)[number];

/** One crowd against one strategy's copy. */
interface Run {
  samples: Sample[];
  /** workerd's CPU, and the gateway's and Redis' (ms). */
  cpu: number;
  backing: number;
  interfered: boolean;
  sellOutMs: number | null;
  violations: string[];
  /** The objects' checkout RPCs (undefined for atomic). */
  rpcs?: number;
}

export interface PeerRow {
  inFlight: number;
  hopMs: number;
  strategy: Contender;
  runs: number;
  /** Mean over the runs; null when a run did not sell out. */
  sellOutMs: number | null;
  acceptedPerSec: number;
  p50Ms: number;
  p99Ms: number;
  workerdCpuMsPerRequest: number;
  gatewayRedisCpuMsPerRequest: number;
  /** RPCs the object served per attempt (null for atomic): 1 unmerged, less merged and refused from the memo. */
  rpcsPerAttempt: number | null;
  violations: string[];
  interfered: boolean;
}

export interface PeerFigures {
  users: number;
  attempts: number;
  stock: number;
  rows: PeerRow[];
  /** Each object's sell-out time over atomic's, per depth and distance: above 1, atomic sold out sooner. */
  ratios: { inFlight: number; hopMs: number; overAtomic: Record<Exclude<Contender, "atomic">, number | null> }[];
}

export async function benchDurableObject(
  stack: Stack,
  opts: {
    users: number;
    attempts: number;
    stock: number;
    hopMs: number;
    processes: Processes;
    progress: (label: string) => void;
    depths?: number[];
    rounds?: number;
  },
): Promise<PeerFigures> {
  const { users, attempts, stock, processes } = opts;
  const depths = opts.depths ?? [50, 500];
  const rounds = opts.rounds ?? 2;
  const shots = await planCrowd(stack.api, users, attempts, `bench-peer-${Date.now().toString(36)}-`);
  const rows: PeerRow[] = [];
  try {
    for (const inFlight of depths) {
      for (const hopMs of [0, opts.hopMs]) {
        opts.progress(`  ${inFlight} in flight, ${hopMs} ms distance: ${rounds} alternating rounds of ${CONTENDERS.join(", ")}`);
        await stack.gateway.setLatency(hopMs);
        const runs = new Map(CONTENDERS.map((s) => [s, [] as Run[]]));
        for (let round = 0; round < rounds; round++) {
          const order = round % 2 === 0 ? CONTENDERS : [...CONTENDERS].reverse();
          for (const strategy of order) {
            const labSaleId = await stack.api.createLabSale(stock, { objectHopMs: hopMs });
            const { result, cpu } = await measureCpu(processes, () =>
              drive(shots, (shot) => stack.api.labCheckout(strategy, labSaleId, shot.token), { concurrency: inFlight }),
            );
            const copy = (await stack.api.labReport(labSaleId)).strategies[strategy];
            runs.get(strategy)?.push({
              samples: result.samples,
              cpu: cpu.cpuMs.workerd ?? 0,
              backing: (cpu.cpuMs.gateway ?? 0) + (cpu.cpuMs.redis ?? 0),
              interfered: cpu.interfered,
              sellOutMs: summarize(result.samples, result.durationMs, stock).sellOutMs,
              violations: labViolations({ samples: result.samples, copy }),
              rpcs: copy.rpcs,
            });
          }
        }
        for (const strategy of CONTENDERS) {
          const done = runs.get(strategy) ?? [];
          const samples = done.flatMap((r) => r.samples);
          const sellOuts = done.map((r) => r.sellOutMs);
          const sellOutMs = sellOuts.every((ms) => ms !== null)
            ? (sellOuts as number[]).reduce((a, b) => a + b, 0) / sellOuts.length
            : null;
          const latency = latencyFigures(samples.map((s) => s.latencyMs));
          rows.push({
            inFlight,
            hopMs,
            strategy,
            runs: done.length,
            sellOutMs,
            acceptedPerSec: sellOutMs ? (stock * 1000) / sellOutMs : 0,
            p50Ms: latency.p50,
            p99Ms: latency.p99,
            workerdCpuMsPerRequest: done.reduce((n, r) => n + r.cpu, 0) / samples.length,
            gatewayRedisCpuMsPerRequest: done.reduce((n, r) => n + r.backing, 0) / samples.length,
            rpcsPerAttempt: strategy === "atomic" ? null : done.reduce((n, r) => n + (r.rpcs ?? 0), 0) / samples.length,
            violations: done.flatMap((r) => r.violations),
            interfered: done.some((r) => r.interfered),
          });
        }
      }
    }
  } finally {
    await stack.gateway.setLatency(0);
  }
  const ratios = depths.flatMap((inFlight) =>
    [0, opts.hopMs].map((hopMs) => {
      const of = (s: string) => rows.find((r) => r.inFlight === inFlight && r.hopMs === hopMs && r.strategy === s)?.sellOutMs;
      const atomic = of("atomic");
      const over = (s: Contender) => {
        const object = of(s);
        return atomic && object ? object / atomic : null;
      };
      return {
        inFlight,
        hopMs,
        overAtomic: { "durable-object": over("durable-object"), "durable-object-merged": over("durable-object-merged") },
      };
    }),
  );
  return { users, attempts, stock, rows, ratios };
}

export function printDurableObject(f: PeerFigures, log: (text: string) => void): void {
  log(
    `\n1c. The Durable Object peer vs atomic: ${f.users} users x ${f.attempts} attempts, stock ${f.stock}, alternating runs; distance = per RPC to the object, per merged call to Upstash`,
  );
  log(
    formatTable(
      f.rows.map((r) => ({
        "in flight": r.inFlight,
        "distance ms": r.hopMs,
        strategy: r.strategy,
        runs: r.runs,
        "sell-out s": seconds(r.sellOutMs),
        "accepted/s": fixed(r.acceptedPerSec, 0),
        "p50 ms": fixed(r.p50Ms),
        "p99 ms": fixed(r.p99Ms),
        "workerd CPU ms/req": fixed(r.workerdCpuMsPerRequest, 3),
        "gateway+redis ms/req": fixed(r.gatewayRedisCpuMsPerRequest, 3),
        "RPCs/attempt": r.rpcsPerAttempt === null ? "-" : fixed(r.rpcsPerAttempt, 3),
        violations: r.violations.length === 0 ? "none" : r.violations.join("; "),
        cores: r.interfered ? "INTERFERED" : "ok",
      })),
    ),
  );
  const times = (n: number | null) => (n === null ? "n/a" : `${fixed(n, 2)}x`);
  for (const r of f.ratios) {
    log(
      `${r.inFlight} in flight, ${r.hopMs} ms: durable-object took ${times(r.overAtomic["durable-object"])} and durable-object-merged ${times(r.overAtomic["durable-object-merged"])} atomic's time to sell out`,
    );
  }
}
