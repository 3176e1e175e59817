// What the waiting room tells a buyer about their wait, from what the line measured
// (lua/waiting-room-progress.lua), so every client shows the same answer. docs/architecture.md
// ("The waiting room": "The wait and the likely sell-out") states the rules and their inputs.

/** What of the line's progress the estimates read (src/admission/waiting-room.ts, Progress). */
export interface MeasuredLine {
  at: number;
  startsAt: number;
  endsAt: number;
  state: string;
  remaining: number;
  used: number;
  fresh: number;
  noShows: number;
  window: { ms: number; admitted: number; returned: number };
  taken: number;
  perUserLimit: number;
}

export interface LineEstimate {
  /** Seconds until the buyer is let in; null when the line has not measured a pace (before the start, held, stalled). */
  estimatedWaitSec: number | null;
  /** The units are most likely gone before this place, counting the no-shows and returns to come. */
  likelySoldOutBeforeYou: boolean;
  /** Places let in per second over the measuring window, when it let any in. */
  admitRate: number | undefined;
}

/** A window shorter than this counts as this long: the first second's admissions come at once. */
const SHORTEST_WINDOW_MS = 1_000;

/** Per second over the line's measuring window; undefined before it measured anything. */
const perSecond = (line: MeasuredLine, count: number): number | undefined =>
  line.window.ms > 0 ? (count * 1000) / Math.max(SHORTEST_WINDOW_MS, line.window.ms) : undefined;

/** Places the line let in per second over its window; undefined when it measured none. */
export const measuredAdmitRate = (line: MeasuredLine): number | undefined => perSecond(line, line.window.admitted) || undefined;

/**
 * The buyer with `aheadOfYou` places before theirs, not yet let in:
 *
 * - the wait: the places to go (theirs included) at the rate the line let places in over its
 *   window, which follows the stock, the no-shows and the returns, not the configured ceiling;
 *   unknown while admission is held or the line let nobody in over the window;
 * - likely sold out: the units the people before them will take, each buyer taking the units a
 *   pass has bought on average (1 until one has), the no-show share (passes counted no-shows,
 *   of the passes used or counted so; none until one is) staying away: for the passes still in
 *   their grace and the places ahead; against the units left now with the units given back at
 *   the measured rate until their turn (or the sale's end, when the wait is unknown).
 */
export function lineEstimate(line: MeasuredLine, aheadOfYou: number, now: number): LineEstimate {
  const admitRate = measuredAdmitRate(line);
  const untilStartSec = Math.max(0, (line.startsAt - now) / 1000);
  const estimatedWaitSec =
    admitRate === undefined || line.state === "paused" ? null : Math.ceil(untilStartSec + (aheadOfYou + 1) / admitRate);
  const resolved = line.noShows + line.used;
  const noShowShare = resolved > 0 ? line.noShows / resolved : 0;
  const unitsPerBuyer = line.used > 0 ? Math.min(line.perUserLimit, Math.max(1, line.taken / line.used)) : 1;
  const claims = (line.fresh + aheadOfYou) * (1 - noShowShare) * unitsPerBuyer;
  const horizonSec = estimatedWaitSec ?? Math.max(0, (line.endsAt - now) / 1000);
  const returning = (perSecond(line, line.window.returned) ?? 0) * horizonSec;
  return { estimatedWaitSec, likelySoldOutBeforeYou: claims >= line.remaining + returning, admitRate };
}
