// Which line of a queued sale's waiting room a join goes to, when the sale has presale lanes:
// each lane has a line of its own beside the public one (docs/lanes.md, "Lanes with a waiting
// room"). Decided by this isolate's clock; lua/waiting-room-join.lua holds the join to the line's
// window by Redis' own, and checks and binds the code there.
import { type Sale, waitingLines, waitingRoomOpensAt } from "../sales/sale";
import { type Line, PUBLIC_LINE } from "../shared/keys";

type LinedSale = Pick<Sale, "startsAt" | "endsAt" | "queue" | "queueOpenedAt" | "lanes">;

/** The lanes' own lines open for joining at `now`, in start order: at most a lane's window and the next ones' pre-queues. */
export const openLaneLines = (sale: LinedSale, now: number) =>
  waitingLines(sale).filter((l) => l.lane !== PUBLIC_LINE && l.opensAt <= now && now < l.endsAt);

/**
 * The line a join goes to. With an access code while lanes' lines are open: the first of them
 * that takes the code (its lane's line or a later lane's; `codeLane`, the code's lane where it
 * was looked up, undefined when not), else the first open one, whose script then refuses the
 * code. Without a code: the public line once it opens, and "ACCESS_CODE_REQUIRED" while only
 * lanes' lines are open. A sale without lanes, or past them: the public line, codes ignored.
 */
export function lineForJoin(
  sale: LinedSale,
  code: { lane: string | undefined } | undefined,
  now: number,
): Line | "ACCESS_CODE_REQUIRED" {
  const open = openLaneLines(sale, now);
  const first = open[0];
  if (!first) return PUBLIC_LINE;
  if (!code) return now >= waitingRoomOpensAt(sale) ? PUBLIC_LINE : "ACCESS_CODE_REQUIRED";
  const from = sale.lanes.find((l) => l.name === code.lane)?.startsAt ?? first.startsAt;
  return (open.find((l) => l.startsAt >= from) ?? first).lane;
}

/** The line a reader names: the presale lane's own (`lane`), without one the public line; undefined when the sale has no such lane. */
export function lineNamed(sale: Pick<Sale, "lanes">, lane: string | undefined): Line | undefined {
  if (lane === undefined) return PUBLIC_LINE;
  return sale.lanes.some((l) => l.name === lane) ? lane : undefined;
}
