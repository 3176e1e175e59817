// lua/waiting-room-progress.lua's reply, as the Worker reads it: one layout, named by its
// header, so a script and a Worker of different versions fail loudly instead of misreading
// each other (the scripts' tests read it with this parser too).

/** Where a sale's line stands, as lua/waiting-room-progress.lua answered (times are Redis', epoch ms). */
export interface Progress {
  at: number;
  /** Every place up to this one is admitted. */
  admitted: number;
  joined: number;
  remaining: number;
  used: number;
  expired: number;
  startsAt: number;
  endsAt: number;
  /** The ceiling on places let in per second. */
  admitPerSec: number;
  /** paused: the sale is, or an operator holds admission. */
  state: "active" | "paused" | "cancelled" | "missing";
  /** A random sale's pre-queue joiners: places 1..drawn, in draw order. */
  drawn: number;
  /** Passes alive given less than a no-show grace ago: each holds a unit back. */
  fresh: number;
  /** Passes counted no-shows so far: unused a grace after they were given. */
  noShows: number;
  /** What the line did over its measuring window: its length (ms; 0 before anything was measured), the places let in, the units given back. */
  window: { ms: number; admitted: number; returned: number };
  /** Units checkouts have taken, those given back since included. */
  taken: number;
  /** Units one buyer may hold. */
  perUserLimit: number;
  /** The operator's notice; null: none. */
  notice: string | null;
  /** When the oldest fresh pass stops holding its unit if it goes unused (epoch ms; 0: no fresh pass). */
  nextNoShowAt: number;
  /** How long a pass holds its unit unused: the no-show grace, or the pass's life when that is shorter (ms). */
  holdMs: number;
  /** The buyers this call admitted (passes it gave): the funnel's "admitted". */
  letIn: number;
}

/** lua/waiting-room-progress.lua's reply, read; throws on any other layout. */
export function parseProgress(reply: unknown): Progress {
  if (!Array.isArray(reply) || reply[0] !== "waiting-room-progress/3" || reply.length !== 23) {
    throw new Error(
      `lua/waiting-room-progress.lua replied in an unknown layout: ${String(Array.isArray(reply) ? reply[0] : reply)}`,
    );
  }
  const n = (i: number) => Number(reply[i]);
  return {
    at: n(1),
    admitted: n(2),
    joined: n(3),
    remaining: n(4),
    used: n(5),
    expired: n(6),
    startsAt: n(7),
    endsAt: n(8),
    admitPerSec: n(9),
    state: String(reply[10]) as Progress["state"],
    drawn: n(11),
    fresh: n(12),
    noShows: n(13),
    window: { ms: n(14), admitted: n(15), returned: n(16) },
    taken: n(17),
    perUserLimit: n(18),
    notice: reply[19] === "" || reply[19] === null ? null : String(reply[19]),
    nextNoShowAt: n(20),
    holdMs: n(21),
    letIn: n(22),
  };
}
