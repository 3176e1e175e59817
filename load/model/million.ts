// A million joiners at once, extrapolated to one Upstash database's limits: what the
// rehearsal on the local stack measured (`npm run load -- --scenario million`, its run of
// 2026-11-28 below) and what the counts say a join and a poll cost (WAITING_ROOM, as
// load/cost/actions.ts counts them and npm test asserts), scaled to larger crowds. Assumptions, stated:
// the line's records grow in proportion to its joiners on the sale's split (a queued sale is
// split for QUEUE_PLANNED_JOINERS, whatever its stock); the joins bunch up as WAITING_ROOM's
// joinPeakFactor says; a waiting page polls as WAITING_ROOM's meanPollSec says.
import { UPSTASH_LIMITS } from "../cost/prices.ts";
import { INPUTS } from "./inputs.ts";
import { isolates, WAITING_ROOM } from "./waiting-room.ts";

/** The rehearsal's run of 2026-11-28 on this machine (one fifo sale, 11 buckets, a record limit of 95.4 MiB). */
export const REHEARSED = {
  joiners: 1_000_000,
  /** The largest record the line left (MEMORY USAGE of one bucket's arrivals), bytes. */
  largestRecordBytes: 11.1 * 1_048_576,
  /** Redis' memory after the joins, bytes. */
  usedMemoryBytes: 206.3 * 1_048_576,
  /** Joins a second: into one redis-server here, pipelined (this machine's, not Upstash's), and through the local Worker. */
  redisJoinsPerSec: 11_894,
  workerJoinsPerSec: 96,
  /** The sampled buyers' polls a second, and Upstash commands per poll with the admissions and checkouts of the phase. */
  pollsPerSec: 67,
  upstashCommandsPerPoll: 0.03,
} as const;

export interface CrowdAtLimits {
  joiners: number;
  /** The busiest second of joining, in Upstash commands, against the database's limit. */
  joinCommandsPerSec: number;
  /** The shortest pre-queue that keeps that second within the limit (s). */
  shortestPrequeueSec: number;
  /** The largest record, and Redis' memory for the line (bytes). */
  largestRecordBytes: number;
  memoryBytes: number;
  /** The waiting pages' requests a second, and the Upstash commands a second they cost (progress reads). */
  pollsPerSec: number;
  pollCommandsPerSec: number;
}

export function crowdAtLimits(joiners: number, w = WAITING_ROOM): CrowdAtLimits {
  const scale = joiners / REHEARSED.joiners;
  const peakJoinsPerSec = (joiners / w.prequeueSec) * w.joinPeakFactor;
  const pollsPerSec = joiners / w.meanPollSec;
  return {
    joiners,
    joinCommandsPerSec: peakJoinsPerSec * w.commandsPerJoin,
    shortestPrequeueSec: (joiners * w.joinPeakFactor * w.commandsPerJoin) / INPUTS.upstashCommandsPerSec,
    largestRecordBytes: REHEARSED.largestRecordBytes * scale,
    memoryBytes: REHEARSED.usedMemoryBytes * scale,
    pollsPerSec,
    // A poll costs no command of its own: each isolate reads the line's progress once a second.
    pollCommandsPerSec: isolates(pollsPerSec),
  };
}

/** The largest line one database holds: the crowd whose largest record reaches the record limit. */
export const largestLine = () => Math.floor((REHEARSED.joiners * UPSTASH_LIMITS.recordBytes) / REHEARSED.largestRecordBytes);
