// Two or more kinds of request measured against each other in alternating rounds on the same
// harness, so a neighbour's load on the shared cores weighs on each alike. Each kind gets its
// throughput, latency and the server CPU per request of every process (from /proc).
import type { Answer } from "../../dev/lib/api-client.ts";
import { type CpuReading, measureCpu, type Processes } from "./cpu.ts";
import { drive, type Sample, type Shot } from "./crowd.ts";
import { latencyFigures } from "./stats.ts";
import { fixed, formatTable } from "./table.ts";

export interface Contender {
  name: string;
  send(shot: Shot): Promise<Answer>;
  /** The code every answer must have (ACCEPTED, OK, SOLD_OUT, ...): anything else fails the run. */
  expect: string;
  /** At least warmup + rounds x perRound shots, used in order. */
  shots: Shot[];
  /** Run before each of this kind's rounds (and its warm-up), outside the measurement. */
  prepare?: () => Promise<void>;
  /**
   * Work the round's requests leave behind, awaited inside its measurement (e.g. until the
   * queue has settled the orders the round accepted): its CPU counts in the round's figures.
   */
  settle?: () => Promise<void>;
}

export interface ContenderFigures {
  name: string;
  requests: number;
  reqPerSec: number;
  /** Throughput round by round (in the order the rounds ran). */
  reqPerSecByRound: number[];
  p50Ms: number;
  p99Ms: number;
  /** CPU per request of each process role (ms). */
  cpuMsPerRequest: Record<string, number>;
  /** The same, round by round (in the order the rounds ran): how much a figure moves. */
  cpuMsPerRequestByRound: Record<string, number>[];
  /** The largest share of the cores other work took in any of this kind's rounds. */
  othersShare: number;
  interfered: boolean;
}

export interface RoundsOptions {
  rounds: number;
  perRound: number;
  /** Requests of each kind sent first, not measured (cold isolate, JIT, connections). */
  warmup: number;
  inFlight: number;
  processes: Processes;
}

async function closedLoop(shots: Shot[], contender: Contender, inFlight: number) {
  const { samples, durationMs } = await drive(shots, (shot) => contender.send(shot), { concurrency: inFlight });
  const unexpected = samples.filter((s) => s.code !== contender.expect);
  if (unexpected.length > 0) {
    throw new Error(`${contender.name}: ${unexpected.length} answers were not ${contender.expect}: ${unexpected[0]?.code}`);
  }
  await contender.settle?.();
  return { samples, durationMs };
}

export async function alternatingRounds(contenders: Contender[], options: RoundsOptions): Promise<ContenderFigures[]> {
  const { rounds, perRound, warmup, inFlight, processes } = options;
  for (const c of contenders) {
    if (c.shots.length < warmup + rounds * perRound) throw new Error(`${c.name}: too few shots for the rounds`);
    await c.prepare?.();
    await closedLoop(c.shots.slice(0, warmup), c, inFlight);
  }
  const measured = contenders.map(() => ({
    samples: [] as Sample[],
    ms: 0,
    readings: [] as CpuReading[],
    requests: [] as number[],
    perSec: [] as number[],
  }));
  for (let round = 0; round < rounds; round++) {
    // The order flips every round, so neither kind always follows the other.
    const order = contenders.map((_, i) => i);
    if (round % 2 === 1) order.reverse();
    for (const i of order) {
      const c = contenders[i] as Contender;
      const slice = c.shots.slice(warmup + round * perRound, warmup + (round + 1) * perRound);
      await c.prepare?.();
      const { result, cpu } = await measureCpu(processes, () => closedLoop(slice, c, inFlight));
      const m = measured[i] as (typeof measured)[number];
      m.samples.push(...result.samples);
      m.ms += result.durationMs;
      m.readings.push(cpu);
      m.requests.push(result.samples.length);
      m.perSec.push((result.samples.length * 1000) / result.durationMs);
    }
  }
  return contenders.map((c, i) => {
    const { samples, ms, readings, requests, perSec } = measured[i] as (typeof measured)[number];
    const latency = latencyFigures(samples.map((s) => s.latencyMs));
    const cpuMsPerRequest = Object.fromEntries(
      Object.keys(processes).map((role) => [role, readings.reduce((n, r) => n + (r.cpuMs[role] ?? 0), 0) / samples.length]),
    );
    return {
      name: c.name,
      requests: samples.length,
      reqPerSec: (samples.length * 1000) / ms,
      reqPerSecByRound: perSec,
      p50Ms: latency.p50,
      p99Ms: latency.p99,
      cpuMsPerRequest,
      cpuMsPerRequestByRound: readings.map((r, round) =>
        Object.fromEntries(Object.entries(r.cpuMs).map(([role, cpuMs]) => [role, cpuMs / (requests[round] ?? 1)])),
      ),
      othersShare: Math.max(...readings.map((r) => r.othersShare)),
      interfered: readings.some((r) => r.interfered),
    };
  });
}

/**
 * `a`'s throughput over `b`'s, round by round (each round against the same round of `b`):
 * the lowest and the highest, how far one run's ratio moves on this machine.
 */
export function ratioSpread(a: ContenderFigures, b: ContenderFigures): { min: number; max: number } {
  const ratios = a.reqPerSecByRound.map((r, round) => r / (b.reqPerSecByRound[round] ?? Number.NaN));
  return { min: Math.min(...ratios), max: Math.max(...ratios) };
}

/** The contenders' figures as a table, one row each, the first column named `label`. */
export function contenderTable(rows: ContenderFigures[], label: string): string {
  return formatTable(
    rows.map((r) => ({
      [label]: r.name,
      requests: r.requests,
      "req/s": fixed(r.reqPerSec, 0),
      "p50 ms": fixed(r.p50Ms),
      "p99 ms": fixed(r.p99Ms),
      "workerd CPU ms/req": fixed(r.cpuMsPerRequest.workerd as number, 3),
      cores: r.interfered ? "INTERFERED" : "ok",
    })),
  );
}
