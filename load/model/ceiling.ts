// The checkout's own ceiling: the largest spike (attempts within one second) one Upstash
// database serves within its commands per second, every command counted, with p99 under a
// second; found by bisection on the spike's size, to the nearest `stepAttempts`. And what
// each accepted order costs the database there, by kind of command.
import { INPUTS } from "./inputs.ts";
import { type Outcome, simulate } from "./simulation.ts";

export const CEILING = {
  /** The answer time the ceiling keeps (ms): p99 at or under it. */
  p99Ms: 1_000,
  /** Bisection bounds and resolution (attempts). */
  lowAttempts: 100_000,
  highAttempts: 1_000_000,
  stepAttempts: 25_000,
} as const;

const fits = (o: Outcome) => o.p99Ms <= CEILING.p99Ms && o.peakCommandsPerSec <= INPUTS.upstashCommandsPerSec;

export interface Ceiling {
  /** The largest spike that fits, or null when even the lower bound does not. */
  attempts: number | null;
  /** The spike that fits (or the lower bound when nothing does), and the smallest that does not. */
  within: Outcome;
  beyond: Outcome | null;
  /** Upstash commands per accepted order at the ceiling, by kind. */
  perAccepted: { scriptCalls: number; settlementClears: number; counters: number; total: number };
}

export function checkoutCeiling(seed: number): Ceiling {
  let low = simulate("atomic", CEILING.lowAttempts, seed);
  if (!fits(low)) return { attempts: null, within: low, beyond: null, perAccepted: perAccepted(low) };
  let high: Outcome | null = null;
  let highAttempts: number = CEILING.highAttempts;
  const top = simulate("atomic", highAttempts, seed);
  if (fits(top)) low = top;
  else high = top;
  while (high && highAttempts - low.attempts > CEILING.stepAttempts) {
    const mid = Math.round((low.attempts + highAttempts) / 2 / CEILING.stepAttempts) * CEILING.stepAttempts;
    const outcome = simulate("atomic", mid, seed);
    if (fits(outcome)) low = outcome;
    else {
      high = outcome;
      highAttempts = mid;
    }
  }
  return { attempts: low.attempts, within: low, beyond: high, perAccepted: perAccepted(low) };
}

function perAccepted(o: Outcome) {
  const per = (n: number) => n / Math.max(1, o.accepted);
  const { scriptCalls, settlementClears, counters } = o.commandsByKind;
  return {
    scriptCalls: per(scriptCalls),
    settlementClears: per(settlementClears),
    counters: per(counters),
    total: per(scriptCalls + settlementClears + counters),
  };
}
