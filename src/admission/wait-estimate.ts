// What the waiting room tells a buyer about their wait, from what the line measured
// (lua/waiting-room-progress.lua), so every client shows the same answer. docs/architecture.md
// ("The waiting room": "The wait and the likely sell-out") states the rules and their inputs.

/** What of the line's progress the estimates read (src/admission/waiting-room.ts, Progress). */
export interface MeasuredLine {
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
  nextNoShowAt: number;
  holdMs: number;
}

export interface LineEstimate {
  /** Seconds until the buyer is let in; null when the line cannot say (before the start, held, or nothing coming free). */
  estimatedWaitSec: number | null;
  /** The units are most likely gone before this place, counting the no-shows and returns to come. */
  likelySoldOutBeforeYou: boolean;
  /** Places let in per second over the measuring window, when it let any in. */
  admitRate: number | undefined;
}

/** A window shorter than this counts as this long: the first second's admissions come at once. */
const SHORTEST_WINDOW_MS = 1_000;
/** Rounds of no-shows looked ahead, at most; fewer places than this coming free in a round is none. */
const MAX_ROUNDS = 100;
const LEAST_FREED = 0.01;

/** Per second over the line's measuring window; undefined before it measured anything. */
const perSecond = (line: MeasuredLine, count: number): number | undefined =>
  line.window.ms > 0 ? (count * 1000) / Math.max(SHORTEST_WINDOW_MS, line.window.ms) : undefined;

/** Places the line let in per second over its window; undefined when it measured none. */
export const measuredAdmitRate = (line: MeasuredLine): number | undefined => perSecond(line, line.window.admitted) || undefined;

/** The no-show share: passes counted no-shows, of those used or counted so; 0 until one is. */
function noShowShareOf(line: MeasuredLine): number {
  const resolved = line.noShows + line.used;
  return resolved > 0 ? line.noShows / resolved : 0;
}

/**
 * Seconds until `need` more places are let in while every unit left is held by a pass in its
 * grace: units come free in rounds a hold apart, the first when the oldest fresh pass's grace
 * ends. In each round the passes then holding that go unused (the no-show share of them) free
 * their units, as do the units given back meanwhile, and each unit freed lets one place in,
 * whose pass holds it in the next round. null when the rounds stop freeing units first.
 */
function roundsWait(line: MeasuredLine, holding: number, need: number, firstAt: number, now: number): number | null {
  const holdSec = line.holdMs / 1000;
  const share = noShowShareOf(line);
  const returnedPerHold = (perSecond(line, line.window.returned) ?? 0) * holdSec;
  let letIn = 0;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const freed = holding * share + returnedPerHold;
    if (freed < LEAST_FREED) return null;
    letIn += freed;
    if (letIn >= need) return Math.ceil(Math.max(0, firstAt - now) / 1000 + round * holdSec);
    holding = freed;
  }
  return null;
}

/**
 * The buyer with `aheadOfYou` places before theirs, not yet let in:
 *
 * - the wait: unknown before the start and while admission is held. Places the units left
 *   unheld can take come at the pace the line measured over its window (not the configured
 *   ceiling); places beyond them wait for units to come free through no-shows and returns,
 *   in rounds a grace apart (roundsWait);
 * - likely sold out: the units the people before them will take (each buyer the units a pass
 *   has bought on average, 1 until one has; the no-show share staying away), for the passes
 *   still in their grace and the places ahead, against the units left now with the units given
 *   back at the measured rate until their turn (or the sale's end, when the wait is unknown).
 */
export function lineEstimate(line: MeasuredLine, aheadOfYou: number, now: number): LineEstimate {
  const admitRate = measuredAdmitRate(line);
  const need = aheadOfYou + 1;
  const free = Math.max(0, line.remaining - line.fresh);
  let estimatedWaitSec: number | null = null;
  if (line.state !== "paused" && now >= line.startsAt) {
    if (need <= free) estimatedWaitSec = admitRate === undefined ? null : Math.ceil(need / admitRate);
    else {
      // The places the free units take now hold them too, their grace ending a hold from now.
      const firstAt = line.fresh > 0 ? line.nextNoShowAt : now + line.holdMs;
      estimatedWaitSec = roundsWait(line, line.fresh + free, need - free, firstAt, now);
    }
  }
  const noShowShare = noShowShareOf(line);
  const unitsPerBuyer = line.used > 0 ? Math.min(line.perUserLimit, Math.max(1, line.taken / line.used)) : 1;
  const claims = (line.fresh + aheadOfYou) * (1 - noShowShare) * unitsPerBuyer;
  const horizonSec = estimatedWaitSec ?? Math.max(0, (line.endsAt - now) / 1000);
  const returning = (perSecond(line, line.window.returned) ?? 0) * horizonSec;
  return { estimatedWaitSec, likelySoldOutBeforeYou: claims >= line.remaining + returning, admitRate };
}
