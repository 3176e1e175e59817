// A waiting-room drop of a million buyers against one Upstash database: the Upstash commands
// per second in each phase, and what the polls cost. A closed form, not a simulation: every
// term is a rate the design fixes (docs/architecture.md, "The waiting room").
import { INPUTS, REGIONS } from "./inputs.ts";

export const WAITING_ROOM = {
  /** Buyers who join the pre-queue of one random sale. Assumption: a very large drop. */
  buyers: 1_000_000,
  /**
   * The pre-queue (prequeueSec): everyone joins within it. Half an hour: at the join's four
   * commands and the busiest second's bunching below, a million joiners need at least
   * 1,000,000 x 4 x 4 / 10,000 = 1,600 s for one database (load/model/million.ts).
   */
  prequeueSec: 1_800,
  /** The busiest second of joining against the average: joins bunch up before the start. Assumption. */
  joinPeakFactor: 4,
  /**
   * Upstash commands per join, as counted with production's limits (test/node/action-costs.test.ts):
   * the global limits' two script calls, the place held (one read), the join script.
   */
  commandsPerJoin: 4,
  /** Places let in per second (admitPerSec): the stock of INPUTS sells in stock / this seconds. */
  admitPerSec: 500,
  /** How often a waiting page polls on average (its retryAfterSec: 1 s near the front, up to 15 s far back). Assumption. */
  meanPollSec: 10,
  /** Within this many seconds of admission of the front, a drawn buyer's exact place is looked up (ESTIMATE_BEYOND_SEC). */
  exactWithinSec: 10,
  /** Upstash commands per admitted place: its pass record read by its poll, and its checkout (one script call at most; merged calls share it). */
  commandsPerAdmitted: 2,
} as const;

export interface PhaseLoad {
  phase: string;
  /** Worker requests per second (joins, polls, checkouts). */
  workerRequestsPerSec: number;
  commandsPerSec: { joins: number; progress: number; placements: number; admitted: number };
  total: number;
  limit: number;
}

/** Isolates serving the polls: at least INPUTS.minIsolatesPerLocation per location, more when the polls' CPU needs them. */
export function isolates(pollsPerSec: number): number {
  return REGIONS.reduce((sum, region) => {
    const perLocation = (pollsPerSec * region.share) / region.locations;
    const needed = Math.ceil((perLocation * INPUTS.cpuMsPerLocalRefusal) / 1000 / INPUTS.isolateUtilisation);
    return sum + region.locations * Math.max(INPUTS.minIsolatesPerLocation, needed);
  }, 0);
}

export function waitingRoomLoad(w = WAITING_ROOM): PhaseLoad[] {
  const limit = INPUTS.upstashCommandsPerSec;
  const polls = w.buyers / w.meanPollSec;
  // Each isolate serving polls runs the progress script about once a second, whoever polls.
  const progress = isolates(polls);
  const joinsPerSec = (w.buyers / w.prequeueSec) * w.joinPeakFactor;
  const joins = joinsPerSec * w.commandsPerJoin;
  // At the start, those within exactWithinSec of the front look their place up once (with a
  // margin of four binomial spreads); later, about admitPerSec a second as the front moves.
  const nearFront = w.admitPerSec * w.exactWithinSec;
  const startPlacements = nearFront + 4 * Math.sqrt(nearFront);
  const row = (phase: string, workerRequestsPerSec: number, c: PhaseLoad["commandsPerSec"]): PhaseLoad => ({
    phase,
    workerRequestsPerSec,
    commandsPerSec: c,
    total: c.joins + c.progress + c.placements + c.admitted,
    limit,
  });
  return [
    row("pre-queue, busiest second", joinsPerSec + polls, { joins, progress, placements: 0, admitted: 0 }),
    row("the start's first second", polls, {
      joins: 0,
      progress,
      placements: startPlacements,
      admitted: w.admitPerSec * w.commandsPerAdmitted,
    }),
    row("admission, each second", polls + w.admitPerSec, {
      joins: 0,
      progress,
      placements: w.admitPerSec,
      admitted: w.admitPerSec * w.commandsPerAdmitted,
    }),
  ];
}
